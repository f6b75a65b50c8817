//! What a key holds (gradients, parameters, activations, a loss), read from its name, and
//! what else its words say: the tensor a gradient belongs to, and its kind of layer.

use std::fmt;
use std::str::FromStr;

use crate::spectral::SPECTRUM_PREFIX;

/// What a series holds, which decides the rules that apply to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Gradient,
    Parameter,
    Activation,
    /// A loss: as a scalar, its rise is evidence that the run's values explode.
    Loss,
    /// A weight matrix's spectrum (`spectrum/<name>`, its eigenvalues) or one of its
    /// figures (`spectrum/<name>/alpha`, ...): judged by its α alone, never by the
    /// rules for values (eigenvalues grow with the weights, by design).
    Spectrum,
    /// Anything else: only the rules that hold for any values apply (nonfinite, exploding growth).
    Other,
}

impl Role {
    pub const NAMES: [&'static str; 6] = [
        "gradient",
        "parameter",
        "activation",
        "loss",
        "other",
        "spectrum",
    ];

    pub fn name(self) -> &'static str {
        match self {
            Role::Gradient => "gradient",
            Role::Parameter => "parameter",
            Role::Activation => "activation",
            Role::Loss => "loss",
            Role::Spectrum => "spectrum",
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
            "loss" => Ok(Role::Loss),
            "spectrum" => Ok(Role::Spectrum),
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

// A loss by any of these words (`loss`, `train/loss`, `epoch_loss`, `val_nll`),
// unless a word says it is a loss's scale (mixed precision's `loss_scale`).
const LOSS_WORDS: &[&str] = &["loss", "losses", "nll"];
const NOT_LOSS_WORDS: &[&str] = &["scale", "scaler", "scaling"];

// A reinforcement-learning agent's reward or return, by any of these words
// (`episode_reward_mean`, `charts/episodic_return`, Stable-Baselines3's `rollout/ep_rew_mean`).
const REWARD_WORDS: &[&str] = &["reward", "rewards", "return", "returns", "rew"];

/// Whether the scalar `key` is an agent's reward or return (a metric: role `Other`): its
/// rise is how a reinforcement-learning run shows it learns.
pub fn is_reward(key: &str) -> bool {
    role_of(key) == Role::Other
        && words(key)
            .iter()
            .any(|w| REWARD_WORDS.contains(&w.as_str()))
}

/// The characters that separate the words of a key.
pub(super) const SEPARATORS: [char; 6] = ['/', '.', '_', '-', ' ', ':'];

fn words(key: &str) -> Vec<String> {
    key.split(SEPARATORS).map(str::to_ascii_lowercase).collect()
}

/// The role of `key` from its words: the first word if it says one (`parameters/relu.weight`
/// is a parameter, `spectrum/fc.weight` a spectrum), else any word, gradient before
/// activation before parameter before loss.
pub fn role_of(key: &str) -> Role {
    let words = words(key);
    if words.first().map(String::as_str) == SPECTRUM_PREFIX.strip_suffix('/') {
        return Role::Spectrum;
    }
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
    } else if has(LOSS_WORDS) && !has(NOT_LOSS_WORDS) {
        Role::Loss
    } else {
        Role::Other
    }
}

/// The tensor a gradient or parameter key names, the same for both: `fc.weight` for
/// `gradients/fc.weight`, `parameters/fc.weight`, `grads/fc.weight`, `weights/fc.weight`,
/// `fc.weight.grad`, `fc.weight_grad` and `fc.weight`. Gradient words go wherever they
/// are; a leading word that says a role goes when more words follow it.
pub(super) fn tensor_name(key: &str) -> String {
    let is = |part: &str, list: &[&str]| {
        list.contains(
            &part
                .trim_end_matches(SEPARATORS)
                .to_ascii_lowercase()
                .as_str(),
        )
    };
    let mut parts: Vec<&str> = key
        .split_inclusive(SEPARATORS)
        .filter(|part| !is(part, GRADIENT_WORDS))
        .collect();
    if parts.len() > 1 && (is(parts[0], PARAMETER_WORDS) || is(parts[0], ACTIVATION_WORDS)) {
        parts.remove(0);
    }
    parts.concat().trim_end_matches(SEPARATORS).to_owned()
}

/// Gradients that only compare with each other across layers: those of a very
/// different kind of layer can be orders of magnitude apart in a healthy run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct LayerKind {
    /// An attention layer's query or key: with near-uniform attention (any
    /// freshly initialised one) their gradients are 10⁵ to 10⁶ times below a
    /// classifier's.
    pub query_or_key: bool,
    /// A bias: its gradient is the mean of the errors, a weight's is scaled by the inputs.
    pub bias: bool,
}

// Words of a query or key projection (`attention.self.query`, `q_proj`, `to_k`, `wq`);
// with a value word too (`query_key_value`, `qkv`) it is a fused projection, not one.
const QUERY_KEY_WORDS: &[&str] = &["query", "key", "q", "k", "wq", "wk"];
const VALUE_WORDS: &[&str] = &["value", "v", "wv", "qkv"];

/// The kind of layer a gradient's key names, by its words.
pub(super) fn layer_kind(key: &str) -> LayerKind {
    let words = words(key);
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    LayerKind {
        query_or_key: has(QUERY_KEY_WORDS) && !has(VALUE_WORDS),
        bias: has(&["bias"]),
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
        // A spectrum's words (`weight`) do not make it a parameter.
        assert_eq!(role_of("spectrum/0.weight"), Role::Spectrum);
        assert_eq!(
            role_of("spectrum/encoder.grad_proj.weight/alpha"),
            Role::Spectrum
        );
        assert_eq!(role_of("fft/spectrum"), Role::Other);
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
        assert_eq!(role_of("gradual/weighted_sum"), Role::Other);
    }

    #[test]
    fn losses_by_name() {
        for key in [
            "loss",
            "train/loss",
            "epoch_loss",
            "Loss/train",
            "val/nll",
            "weighted_loss",
        ] {
            assert_eq!(role_of(key), Role::Loss, "{key}");
        }
        assert_eq!(role_of("loss_scale"), Role::Other);
        assert_eq!(role_of("grad_norm"), Role::Gradient);
        assert_eq!(role_of("learning_rate"), Role::Other);
    }

    #[test]
    fn gradients_and_parameters_name_the_same_tensor() {
        for key in [
            "gradients/fc.weight",
            "parameters/fc.weight",
            "grads/fc.weight",
            "weights/fc.weight",
            "fc.weight.grad",
            "fc.weight_grad",
            "fc.weight",
        ] {
            assert_eq!(tensor_name(key), "fc.weight", "{key}");
        }
        assert_eq!(tensor_name("gradients/weight"), "weight");
        assert_eq!(tensor_name("weight.grad"), "weight");
        assert_eq!(tensor_name("weight"), "weight");
    }

    #[test]
    fn query_and_key_gradients_are_their_own_kind() {
        let qk = |key| layer_kind(key).query_or_key;
        assert!(qk(
            "gradients/bert.encoder.layer.0.attention.self.query.weight"
        ));
        assert!(qk("layers.0.attn.k_proj.weight.grad"));
        assert!(!qk(
            "gradients/bert.encoder.layer.0.attention.self.value.weight"
        ));
        assert!(!qk("gradients/h.0.attn.query_key_value.weight"));
        assert!(!qk("gradients/classifier.bias"));
        assert!(layer_kind("gradients/classifier.bias").bias);
        assert!(!layer_kind("gradients/classifier.weight").bias);
    }

    #[test]
    fn rewards_and_returns_are_known_by_their_words() {
        for key in [
            "ray/tune/episode_reward_mean",
            "rollout/ep_rew_mean",
            "charts/episodic_return",
            "episode_return",
        ] {
            assert!(is_reward(key), "{key}");
        }
        for key in [
            "critic_loss",
            "gradients/reward_head.weight",
            "train/accuracy",
        ] {
            assert!(!is_reward(key), "{key}");
        }
    }

    #[test]
    fn role_names_round_trip() {
        for name in Role::NAMES {
            assert_eq!(name.parse::<Role>().unwrap().name(), name);
        }
        assert!("weights".parse::<Role>().is_err());
    }
}
