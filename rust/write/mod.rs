//! Writing events files: histograms, scalars and card layouts as TensorBoard reads them.

pub mod event_writer;
