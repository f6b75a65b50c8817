//! Writing events files: histograms, scalars and card layouts as TensorBoard reads them.

pub mod binned;
pub mod diagnosed;
pub mod event_writer;
