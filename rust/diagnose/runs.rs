//! What the rules of one series need from the rest of its run: its end and its other gradients.

use std::collections::{BTreeMap, HashMap};

use super::{Role, SeriesView};
use crate::histograms::profile::StepProfile;

/// What the rules of one series need from the rest of its run.
pub(super) struct RunSummary {
    /// The last step of any series of the run: a series ending well before it stopped.
    pub last_step: i64,
    /// For each step, the two largest gradient scales of the run's series, with the series' index.
    gradient_top: BTreeMap<i64, [(usize, f64); 2]>,
    /// The run's gradient series by key.
    gradients: HashMap<String, usize>,
}

impl RunSummary {
    pub fn of<'a>(
        series: &[SeriesView<'a>],
        profiles: &[Vec<StepProfile>],
        roles: &[Role],
    ) -> HashMap<&'a str, RunSummary> {
        let mut runs: HashMap<&str, RunSummary> = HashMap::new();
        for (i, s) in series.iter().enumerate() {
            let run = runs.entry(s.run).or_insert_with(|| RunSummary {
                last_step: i64::MIN,
                gradient_top: BTreeMap::new(),
                gradients: HashMap::new(),
            });
            if let Some(&last) = s.steps.last() {
                run.last_step = run.last_step.max(last);
            }
            if roles[i] != Role::Gradient {
                continue;
            }
            run.gradients.insert(s.tag.to_owned(), i);
            for (&step, p) in s.steps.iter().zip(&profiles[i]) {
                if !p.has_values() {
                    continue;
                }
                let top = run
                    .gradient_top
                    .entry(step)
                    .or_insert([(usize::MAX, f64::NEG_INFINITY); 2]);
                let scale = p.scale();
                if scale > top[0].1 {
                    top[1] = top[0];
                    top[0] = (i, scale);
                } else if scale > top[1].1 {
                    top[1] = (i, scale);
                }
            }
        }
        runs
    }

    /// For the gradient of a bias, the gradient of the same layer's weight: its key and its
    /// scale at each step of `steps`. A key names the weight with `weight`, `weights` or
    /// `kernel` where the bias's has `bias`.
    pub fn weight_of_bias<'a>(
        &self,
        key: &str,
        steps: &[i64],
        series: &[SeriesView<'a>],
        profiles: &[Vec<StepProfile>],
    ) -> Option<(&'a str, Vec<Option<f64>>)> {
        let words: Vec<&str> = key
            .split_inclusive(['/', '.', '_', '-', ' ', ':'])
            .collect();
        let bias_at = words.iter().position(|w| {
            w.trim_end_matches(['/', '.', '_', '-', ' ', ':'])
                .eq_ignore_ascii_case("bias")
        })?;
        let j = ["weight", "weights", "kernel"].iter().find_map(|name| {
            let mut sibling: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
            sibling[bias_at] = words[bias_at].replacen(&words[bias_at][..4], name, 1);
            self.gradients.get(&sibling.concat()).copied()
        })?;
        let scales: HashMap<i64, f64> = series[j]
            .steps
            .iter()
            .zip(&profiles[j])
            .filter(|(_, p)| p.has_values())
            .map(|(&step, p)| (step, p.scale()))
            .collect();
        Some((
            series[j].tag,
            steps.iter().map(|s| scales.get(s).copied()).collect(),
        ))
    }

    /// At each step of series `i`, the largest scale of another gradient of the run and its key.
    pub fn reference<'a>(
        &self,
        i: usize,
        steps: &[i64],
        series: &[SeriesView<'a>],
    ) -> Vec<Option<(f64, &'a str)>> {
        steps
            .iter()
            .map(|step| {
                let top = self.gradient_top.get(step)?;
                let (j, scale) = if top[0].0 == i { top[1] } else { top[0] };
                (j != usize::MAX).then(|| (scale, series[j].tag))
            })
            .collect()
    }
}
