//! What a histogram key holds (gradients, parameters, activations), read from its name.

use std::fmt;
use std::str::FromStr;

/// What a series holds, which decides the rules that apply to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Gradient,
    Parameter,
    Activation,
    /// Anything else: only the rules that hold for any values apply (nonfinite, exploding growth).
    Other,
}

impl Role {
    pub const NAMES: [&'static str; 4] = ["gradient", "parameter", "activation", "other"];

    pub fn name(self) -> &'static str {
        match self {
            Role::Gradient => "gradient",
            Role::Parameter => "parameter",
            Role::Activation => "activation",
            Role::Other => "other",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "gradient" => Ok(Role::Gradient),
            "parameter" => Ok(Role::Parameter),
            "activation" => Ok(Role::Activation),
            "other" => Ok(Role::Other),
            _ => Err(format!(
                "unknown role {s:?}: expected one of {}",
                Role::NAMES.join(", ")
            )),
        }
    }
}

// Words of a key, split at `/ . _ -` and spaces, that say its role. Gradient
// words win, so `gradients/0.weight` (run.watch) and `linear/weight_grad`
// (a common PyTorch habit) are gradients, not parameters.
const GRADIENT_WORDS: &[&str] = &["grad", "grads", "gradient", "gradients"];
const PARAMETER_WORDS: &[&str] = &[
    "param",
    "params",
    "parameter",
    "parameters",
    "weight",
    "weights",
    "kernel",
    "bias",
];
const ACTIVATION_WORDS: &[&str] = &[
    "act",
    "acts",
    "activation",
    "activations",
    "output",
    "outputs",
    "relu",
    "tanh",
    "sigmoid",
];

/// The role of `key` from its words: the first word if it says one (`parameters/relu.weight`
/// is a parameter), else any word, gradient before activation before parameter.
pub fn role_of(key: &str) -> Role {
    let words: Vec<String> = key
        .split(['/', '.', '_', '-', ' ', ':'])
        .map(str::to_ascii_lowercase)
        .collect();
    if let Some(role) = words.first().and_then(|w| role_of_word(w)) {
        return role;
    }
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    if has(GRADIENT_WORDS) {
        Role::Gradient
    } else if has(ACTIVATION_WORDS) {
        Role::Activation
    } else if has(PARAMETER_WORDS) {
        Role::Parameter
    } else {
        Role::Other
    }
}

fn role_of_word(word: &str) -> Option<Role> {
    [
        (GRADIENT_WORDS, Role::Gradient),
        (ACTIVATION_WORDS, Role::Activation),
        (PARAMETER_WORDS, Role::Parameter),
    ]
    .into_iter()
    .find(|(list, _)| list.contains(&word))
    .map(|(_, role)| role)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_run_watch_writes() {
        assert_eq!(role_of("gradients/0.weight"), Role::Gradient);
        assert_eq!(role_of("parameters/encoder.layers.0.bias"), Role::Parameter);
        assert_eq!(role_of("activations/encoder.relu"), Role::Activation);
        assert_eq!(role_of("parameters/act.weight"), Role::Parameter);
    }

    #[test]
    fn keys_other_writers_use() {
        assert_eq!(role_of("linear/weight_grad"), Role::Gradient);
        assert_eq!(role_of("linear/weight"), Role::Parameter);
        assert_eq!(
            role_of("sequential/hidden/kernel/histogram"),
            Role::Parameter
        );
        assert_eq!(role_of("dense/relu"), Role::Activation);
        assert_eq!(role_of("model/outputs"), Role::Activation);
        assert_eq!(role_of("hist/normal"), Role::Other);
        // Words, not substrings: "gradual" and "weighted" say nothing.
        assert_eq!(role_of("gradual/weighted_loss"), Role::Other);
    }

    #[test]
    fn role_names_round_trip() {
        for name in Role::NAMES {
            assert_eq!(name.parse::<Role>().unwrap().name(), name);
        }
        assert!("weights".parse::<Role>().is_err());
    }
}
