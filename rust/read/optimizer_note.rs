//! The optimizer a run trains with, as `watch` notes it in the run's events file.
//!
//! A note is an `Event` (written by `event_writer::optimizer_event`) whose only
//! summary value carries plugin `histoscope_optimizer` and an encoded
//! [`OptimizerNote`] as its content, with no payload, so TensorBoard and other
//! readers pass over it as they pass over `metric_layout`'s declarations. The
//! note holds class names, not a verdict: which optimizers adapt their steps
//! is a rule of diagnosis (`diagnose::optimizer`), free to learn new names.

use prost::Message;

/// The plugin name that marks an optimizer note.
pub const PLUGIN: &str = "histoscope_optimizer";
/// The tag a note is written under.
pub const TAG: &str = "_histoscope/optimizer";

/// The optimizer's class and the classes it derives from, most derived first,
/// each as `module.QualifiedName` (`torch.optim.adamw.AdamW`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct OptimizerNote {
    #[prost(string, repeated, tag = "1")]
    pub classes: Vec<String>,
}

/// The note in a value's plugin content; None if it is not one.
pub fn decode(content: &[u8]) -> Option<OptimizerNote> {
    OptimizerNote::decode(content).ok()
}
