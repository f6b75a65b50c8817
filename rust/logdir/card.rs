//! A card read through the runs' loaders: one tag across the chosen runs, each run's
//! picked steps read again and all counted on shared bins, so buckets never leave the core.

use std::sync::Mutex;

use crate::bins::card::{CardPick, CardRequest};
use crate::bins::shared::rebin_shared;
use crate::histograms::stats::Stats;
use crate::logdir::run_loader::{BucketsError, RunLoader, TagIndex};

/// One tag across several runs on shared bins, as a card draws it.
#[derive(Debug, PartialEq)]
pub struct Card {
    /// The shared edges; None when no run had a step to count.
    pub edges: Option<Vec<f64>>,
    /// The runs holding the tag, in the order given (none when no run had a step to count).
    pub runs: Vec<CardRun>,
    /// The runs whose buckets could not be read again, in the order given.
    pub errors: Vec<CardFailure>,
}

/// One run's part of a card.
#[derive(Debug, Clone, PartialEq)]
pub struct CardRun {
    pub run: String,
    /// The steps drawn.
    pub steps: Vec<i64>,
    /// `bins` counts per drawn step, row after row.
    pub counts: Vec<f64>,
    /// The last step at or before the chosen one, and the step before it.
    pub current: Option<CountedStep>,
    pub previous: Option<CountedStep>,
    /// The series' first and last step.
    pub first: i64,
    pub last: i64,
}

/// A step marked on a card, with its counts on the shared bins and its statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct CountedStep {
    pub step: i64,
    pub counts: Vec<f64>,
    pub stats: Stats,
}

/// A run left out of a card, and why.
#[derive(Debug, PartialEq)]
pub struct CardFailure {
    pub run: String,
    pub error: BucketsError,
}

/// What a card took of one run before counting: positions, steps and their buckets.
struct Taken {
    run: String,
    pick: CardPick,
    steps: Vec<i64>,
    stats: Vec<Stats>,
    first: i64,
    last: i64,
    buckets: Vec<Vec<f64>>,
}

/// The card of `tag` across `runs` as `request` asks: each run locked on its own,
/// side by side, its picked steps read again; a run without the tag is left out, a
/// run whose files changed since they were indexed is listed in `errors`.
pub fn read_card(runs: &[&Mutex<RunLoader>], tag: &str, request: &CardRequest) -> Card {
    // Runs one after another, on the caller's thread: a run's segments are read in
    // parallel inside `RunLoader::buckets`, and a rayon worker that held a run's lock
    // while waiting for them could steal another card's task for the same run and wait
    // on itself. One lock at a time: a card never waits on a run while holding another.
    let taken: Vec<Option<Result<Taken, CardFailure>>> = runs
        .iter()
        .map(|run| {
            let run = run.lock().unwrap_or_else(|p| p.into_inner());
            take(&run, tag, request)
        })
        .collect();
    let mut errors = Vec::new();
    let mut read = Vec::new();
    for found in taken.into_iter().flatten() {
        match found {
            Ok(taken) => read.push(taken),
            Err(failure) => errors.push(failure),
        }
    }
    counted(read, request.bins, errors)
}

/// The steps `request` picks of `tag` in `run`, with their buckets; None without the tag.
fn take(run: &RunLoader, tag: &str, request: &CardRequest) -> Option<Result<Taken, CardFailure>> {
    let index: &TagIndex = run.tag(tag).filter(|index| !index.is_empty())?;
    let rows = &index.rows;
    let pick = request.pick(&rows.steps);
    let positions = pick.positions();
    let steps: Vec<i64> = positions.iter().map(|&p| rows.steps[p]).collect();
    let buckets = match run.buckets(tag, &steps) {
        Ok(found) => found.into_iter().map(Option::unwrap_or_default).collect(),
        Err(error) => {
            let run = run.name().to_owned();
            return Some(Err(CardFailure { run, error }));
        }
    };
    Some(Ok(Taken {
        run: run.name().to_owned(),
        stats: positions.iter().map(|&p| rows.stats[p]).collect(),
        first: rows.steps[0],
        last: rows.steps[rows.len() - 1],
        pick,
        steps,
        buckets,
    }))
}

/// Every run's taken steps counted on one set of shared bins.
fn counted(read: Vec<Taken>, bins: usize, errors: Vec<CardFailure>) -> Card {
    if read.iter().all(|taken| taken.buckets.is_empty()) {
        return Card {
            edges: None,
            runs: Vec::new(),
            errors,
        };
    }
    let slices: Vec<Vec<&[f64]>> = read
        .iter()
        .map(|taken| taken.buckets.iter().map(Vec::as_slice).collect())
        .collect();
    let shared = rebin_shared(&slices, bins);
    let runs = read
        .into_iter()
        .zip(shared.runs)
        .map(|(taken, counts)| card_run(taken, counts, bins))
        .collect();
    Card {
        edges: Some(shared.edges),
        runs,
        errors,
    }
}

/// A run's rows split: the drawn steps first, then the current and the previous.
fn card_run(taken: Taken, counts: Vec<f64>, bins: usize) -> CardRun {
    let drawn = taken.pick.drawn.len();
    let marked = |k: usize| CountedStep {
        step: taken.steps[k],
        counts: counts[k * bins..(k + 1) * bins].to_vec(),
        stats: taken.stats[k],
    };
    let current = taken.pick.current.map(|_| marked(drawn));
    let previous = taken.pick.previous.map(|_| marked(drawn + 1));
    CardRun {
        steps: taken.steps[..drawn].to_vec(),
        counts: counts[..drawn * bins].to_vec(),
        current,
        previous,
        run: taken.run,
        first: taken.first,
        last: taken.last,
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::bins::rebin::rebin;
    use crate::logdir::bucket_cache::shared_buckets;
    use crate::logdir::run_loader::{read, Progress};
    use crate::read::test_events::tensor_histogram;

    /// A run of one file holding `tag` at `steps`, each step one bucket `[step, step + 1)`.
    fn run(name: &str, tag: &str, steps: &[i64]) -> (Mutex<RunLoader>, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("histoscope-card-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("events.out.tfevents.1");
        let bytes: Vec<u8> = steps
            .iter()
            .flat_map(|&s| tensor_histogram(tag, s, &[s as f64, s as f64 + 1.0, 2.0], true))
            .collect();
        fs::write(&path, bytes).unwrap();
        let loader = Mutex::new(RunLoader::new(name, shared_buckets(1 << 20)));
        let files = vec![path.clone()];
        let progress = read(&loader, &files, 1 << 20, Duration::from_secs(60));
        assert_eq!(progress, Progress::CaughtUp);
        (loader, path)
    }

    #[test]
    fn runs_are_counted_on_shared_bins_with_their_chosen_steps() {
        let (a, _) = run("a", "h", &[0, 1, 2, 3]);
        let (b, _) = run("b", "h", &[2, 5]);
        let (c, _) = run("c", "other", &[0]);
        let request = CardRequest::new(Some(2), None, None, Some(2), Some(7)).unwrap();
        let card = read_card(&[&a, &b, &c], "h", &request);
        assert!(card.errors.is_empty());
        let names: Vec<&str> = card.runs.iter().map(|r| r.run.as_str()).collect();
        assert_eq!(names, vec!["a", "b"]);
        let every: [&[f64]; 7] = [
            &[0.0, 1.0, 2.0],
            &[3.0, 4.0, 2.0],
            &[2.0, 3.0, 2.0],
            &[1.0, 2.0, 2.0],
            &[2.0, 3.0, 2.0],
            &[5.0, 6.0, 2.0],
            &[2.0, 3.0, 2.0],
        ];
        let want = rebin(&every, 7);
        assert_eq!(card.edges, Some(want.edges));
        let (ra, rb) = (&card.runs[0], &card.runs[1]);
        assert_eq!((ra.steps.clone(), ra.first, ra.last), (vec![0, 3], 0, 3));
        assert_eq!(ra.counts, want.counts[..14]);
        let current = ra.current.as_ref().unwrap();
        assert_eq!(
            (current.step, &current.counts[..]),
            (2, &want.counts[14..21])
        );
        assert_eq!(ra.previous.as_ref().unwrap().step, 1);
        assert_eq!(rb.steps, vec![2, 5]);
        assert_eq!(rb.current.as_ref().unwrap().counts, want.counts[42..49]);
        assert!(rb.previous.is_none());
    }

    #[test]
    fn cards_asked_at_once_from_many_threads_never_wait_on_each_other() {
        use std::sync::{mpsc, Arc};
        // Every step its own segment and no cache: each card reads many segments in parallel.
        let steps: Vec<i64> = (0..40).collect();
        let load = |name: &str| {
            let (loader, path) = run(name, "h", &steps);
            let fresh = Mutex::new(RunLoader::new(name, shared_buckets(0)));
            let progress = read(&fresh, &[path], 64, Duration::from_secs(60));
            assert_eq!(progress, Progress::CaughtUp);
            drop(loader);
            fresh
        };
        let runs = Arc::new([load("busy-a"), load("busy-b")]);
        let (done, finished) = mpsc::channel();
        for _ in 0..8 {
            let (runs, done) = (Arc::clone(&runs), done.clone());
            std::thread::spawn(move || {
                let request = CardRequest::new(None, None, None, Some(40), None).unwrap();
                for _ in 0..6 {
                    let card = read_card(&[&runs[0], &runs[1]], "h", &request);
                    assert_eq!(card.runs.len(), 2);
                }
                done.send(()).unwrap();
            });
        }
        for _ in 0..8 {
            finished
                .recv_timeout(Duration::from_secs(120))
                .expect("cards deadlocked: a thread never finished");
        }
    }

    #[test]
    fn a_run_whose_file_is_gone_is_listed_and_no_step_gives_no_bins() {
        let (a, _) = run("gone-a", "h", &[0, 1]);
        let (b, path) = run("gone-b", "h", &[0, 1]);
        fs::remove_file(&path).unwrap();
        let request = CardRequest::new(None, None, None, None, None).unwrap();
        let card = read_card(&[&a, &b], "h", &request);
        assert_eq!(card.runs.len(), 1);
        assert_eq!(card.errors[0].run, "gone-b");
        assert!(matches!(
            card.errors[0].error,
            BucketsError::Vanished { .. }
        ));
        let before = CardRequest::new(Some(-1), Some(5), None, None, None).unwrap();
        let empty = read_card(&[&a], "h", &before);
        assert_eq!((empty.edges, empty.runs.len()), (None, 0));
    }
}
