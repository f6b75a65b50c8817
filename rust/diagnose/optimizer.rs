//! How a run's optimizer turns gradients into steps, from the classes `watch` noted:
//! what decides whether a small gradient stops a parameter.

/// How an optimizer turns a gradient into a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptimizerKind {
    /// The step is the gradient times a rate, with or without momentum (SGD):
    /// a gradient 10⁴ times smaller moves its parameter 10⁴ times less.
    SgdLike,
    /// The step is scaled per parameter by the gradient's own history (Adam,
    /// RMSprop, Adagrad, Adafactor) or taken by its sign (Lion, Rprop), or
    /// scaled per layer (LAMB, LARS): a small but steady gradient still moves
    /// its parameter as far as a large one.
    Adaptive,
}

// Lower-case parts of class names. Adaptive first: `AdamWScheduleFree` adapts.
const ADAPTIVE: &[&str] = &[
    "adam",
    "adagrad",
    "adadelta",
    "adafactor",
    "adabelief",
    "adan",
    "rmsprop",
    "rprop",
    "lion",
    "lamb",
    "lars",
    "sophia",
    "shampoo",
    "muon",
    "novograd",
    "prodigy",
];
const SGD_LIKE: &[&str] = &["sgd"];

impl OptimizerKind {
    /// The kind of the optimizer of `classes` (its class and those it derives
    /// from, most derived first, each `module.Name`), by the first class whose
    /// name says one; None for an optimizer of no known kind (L-BFGS, say).
    pub fn of(classes: &[String]) -> Option<OptimizerKind> {
        classes.iter().find_map(|class| {
            let name = class
                .rsplit('.')
                .next()
                .unwrap_or(class)
                .to_ascii_lowercase();
            let says = |list: &[&str]| list.iter().any(|part| name.contains(part));
            if says(ADAPTIVE) {
                Some(OptimizerKind::Adaptive)
            } else if says(SGD_LIKE) {
                Some(OptimizerKind::SgdLike)
            } else {
                None
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(classes: &[&str]) -> Option<OptimizerKind> {
        OptimizerKind::of(&classes.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn optimizers_by_their_classes() {
        use OptimizerKind::*;
        assert_eq!(kind(&["torch.optim.adamw.AdamW"]), Some(Adaptive));
        assert_eq!(
            kind(&["bitsandbytes.optim.adamw.PagedAdamW8bit"]),
            Some(Adaptive)
        );
        assert_eq!(kind(&["torch.optim.rmsprop.RMSprop"]), Some(Adaptive));
        assert_eq!(
            kind(&["transformers.optimization.Adafactor"]),
            Some(Adaptive)
        );
        assert_eq!(kind(&["torch.optim.sgd.SGD"]), Some(SgdLike));
        // A class of its own is known by the class it derives from.
        assert_eq!(
            kind(&["my.MyOptimizer", "torch.optim.sgd.SGD"]),
            Some(SgdLike)
        );
        assert_eq!(kind(&["torch.optim.lbfgs.LBFGS"]), None);
        assert_eq!(kind(&[]), None);
    }
}
