//! The restart rule held across every surface that reads a run: random writers restart
//! across files, and load, the stream behind `check`, the follower and its card, the
//! live chart and live diagnosis keep the same steps of every tag.
//!
//! The reference is `plan::plan_run`, TensorBoard's rule: a tag's step going back, or
//! a `SessionLog.START`, drops that tag's values (every tag's, for a START) from that
//! step on. The surfaces fed by a writer (the live chart, live diagnosis) see values
//! only, never a START, so they are held to the rule over the values alone.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use proptest::prelude::*;

use crate::bins::card::{CardRequest, CARD_MAX_STEPS};
use crate::bins::live_chart::LiveChart;
use crate::diagnose::{LiveDiagnosis, Options};
use crate::histograms::stats::Stats;
use crate::logdir::bucket_cache::shared_buckets;
use crate::logdir::card::read_card;
use crate::logdir::load::{load_logdir, LogdirSource, Selection};
use crate::logdir::plan::{plan_run, Mark, Skeleton};
use crate::logdir::run::Reading;
use crate::logdir::run_loader::{read, RunLoader};
use crate::logdir::stream::RunStream;
use crate::read::test_events::{restart, tensor_histogram_at};

/// One record a writer writes: a histogram of tag `tag` at `step` whose one bucket
/// counts `writer + 1` values (so a value names its writer), or a `SessionLog.START`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Record {
    Value {
        tag: usize,
        step: i64,
        writer: usize,
    },
    Start(i64),
}

/// One writer of the run: the step it starts at, how many steps it logs, whether it
/// opens a new events file (else it goes on in the last one) and writes a START first.
#[derive(Debug, Clone)]
struct Writer {
    start: i64,
    steps: i64,
    new_file: bool,
    session_start: bool,
}

/// Each tag's steps that survive, with the writer of each.
type Kept = BTreeMap<String, Vec<(i64, usize)>>;

fn tag_name(tag: usize) -> String {
    format!("h{tag}")
}

/// The run's files, each a list of records in writing order: writer after writer,
/// each logging tag `t` at the steps that are multiples of `periods[t]`.
fn written(periods: &[i64], writers: &[Writer]) -> Vec<Vec<Record>> {
    let mut files: Vec<Vec<Record>> = Vec::new();
    for (w, writer) in writers.iter().enumerate() {
        if writer.new_file || files.is_empty() {
            files.push(Vec::new());
        }
        let file = files.last_mut().expect("pushed above");
        if writer.session_start {
            file.push(Record::Start(writer.start));
        }
        for step in writer.start..writer.start + writer.steps {
            for (tag, &period) in periods.iter().enumerate() {
                if step % period == 0 {
                    file.push(Record::Value {
                        tag,
                        step,
                        writer: w,
                    });
                }
            }
        }
    }
    files
}

/// What TensorBoard's rule keeps of `files`; with `starts` false, over the values alone.
fn reference(files: &[Vec<Record>], starts: bool) -> Kept {
    let skeletons: Vec<Skeleton> = files
        .iter()
        .map(|records| Skeleton {
            entries: records
                .iter()
                .filter_map(|record| match *record {
                    Record::Value { tag, step, .. } => Some(Mark::Histogram {
                        tag: tag_name(tag),
                        step,
                        confirmed: true,
                    }),
                    Record::Start(step) => starts.then_some(Mark::Start { step }),
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    let plan = plan_run(&skeletons);
    let mut kept = Kept::new();
    let values = files.iter().map(|records| {
        records
            .iter()
            .filter(move |r| starts || matches!(r, Record::Value { .. }))
    });
    for (records, keep) in values.zip(&plan.keep) {
        for (record, &kept_it) in records.zip(keep) {
            if let (Record::Value { tag, step, writer }, true) = (*record, kept_it) {
                kept.entry(tag_name(tag)).or_default().push((step, writer));
            }
        }
    }
    kept
}

/// A record as framed event bytes; a tag's first value in a file names its plugin,
/// as TensorFlow's writers do. Each writer writes a minute after the one before, so
/// that a step logged again in the same file is a restart, not a burst of shared tags.
fn record_bytes(record: Record, named: &mut Vec<usize>) -> Vec<u8> {
    match record {
        Record::Value { tag, step, writer } => {
            let first = !named.contains(&tag);
            named.push(tag);
            let wall_time = 60.0 * writer as f64 + step as f64 / 10.0;
            let rows = [0.0, 1.0, (writer + 1) as f64];
            tensor_histogram_at(&tag_name(tag), step, wall_time, &rows, first)
        }
        Record::Start(step) => restart(step),
    }
}

fn file_name(index: usize) -> String {
    format!("events.out.tfevents.{}.host", 1000 + index)
}

fn temp_logdir() -> PathBuf {
    static CASES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let case = CASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("histoscope-restarts-{}-{case}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("r")).unwrap();
    dir
}

/// Writes `files` into run `r` of `logdir` record by record, the follower reading
/// what was written every `poll` records, `segment` bytes at a time; returns it.
fn write_and_follow(
    logdir: &Path,
    files: &[Vec<Record>],
    poll: usize,
    segment: u64,
) -> Mutex<RunLoader> {
    let follower = Mutex::new(RunLoader::new("r", shared_buckets(1 << 30)));
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut written = 0;
    let far = Duration::from_secs(60);
    for (i, records) in files.iter().enumerate() {
        let path = logdir.join("r").join(file_name(i));
        let mut file = fs::File::create(&path).unwrap();
        paths.push(path);
        let mut named = Vec::new();
        for &record in records {
            file.write_all(&record_bytes(record, &mut named)).unwrap();
            written += 1;
            if written % poll == 0 {
                read(&follower, &paths, segment, far);
            }
        }
    }
    read(&follower, &paths, segment, far);
    follower
}

/// Each tag's steps as `load_histograms` reads them, with the writer of each value.
fn loaded(logdir: &Path) -> Kept {
    let logdir = load_logdir(logdir, &Selection::default()).unwrap();
    logdir
        .series
        .iter()
        .map(|s| {
            let writers = (0..s.len()).map(|i| s.step_buckets(i)[2] as usize - 1);
            (
                s.tag.clone(),
                s.steps.iter().copied().zip(writers).collect(),
            )
        })
        .collect()
}

/// Each tag's steps as `check` streams the run, as step profiles.
fn streamed(logdir: &Path) -> BTreeMap<String, Vec<i64>> {
    let source = LogdirSource::local(logdir);
    let stream = RunStream::open(&source, &Selection::default(), None, Reading::Profiles).unwrap();
    stream
        .flatten()
        .flat_map(|streamed| streamed.run.profiled)
        .map(|p| (p.tag.clone(), p.steps))
        .collect()
}

/// Each tag's steps in the follower's index, with the writer of each read again. A tag
/// whose every step a restart dropped keeps an empty index, so that its next generation
/// tells a page the steps it holds went; it has no steps, as loading has none of it.
fn followed(follower: &Mutex<RunLoader>) -> Kept {
    let run = follower.lock().unwrap();
    run.tags()
        .filter(|tag| !run.tag(tag).unwrap().is_empty())
        .map(|tag| {
            let steps = &run.tag(tag).unwrap().rows.steps;
            let buckets = run.buckets(tag, steps).unwrap();
            let writers = buckets.iter().map(|b| b.as_ref().unwrap()[2] as usize - 1);
            (tag.to_owned(), steps.iter().copied().zip(writers).collect())
        })
        .collect()
}

/// Each tag's steps on its card with every step drawn, with each step's writer.
fn carded(follower: &Mutex<RunLoader>, tags: &[String]) -> Kept {
    let request = CardRequest::new(None, None, None, Some(CARD_MAX_STEPS), Some(4)).unwrap();
    tags.iter()
        .filter_map(|tag| {
            let card = read_card(&[follower], tag, &request);
            assert_eq!(card.errors, vec![], "card of {tag}");
            let run = card.runs.first()?;
            let writers = run.counts.chunks(4).map(|row| {
                let total: f64 = row.iter().sum();
                total.round() as usize - 1
            });
            Some((
                tag.clone(),
                run.steps.iter().copied().zip(writers).collect(),
            ))
        })
        .collect()
}

/// Each tag's steps a live chart holds once fed the values in writing order, with
/// the writer of each (its row of counts sums to the writer's count).
fn charted(files: &[Vec<Record>], keep: usize) -> Kept {
    let bins = 4;
    let mut chart = LiveChart::new(bins, keep);
    for record in files.iter().flatten() {
        if let Record::Value { tag, step, writer } = *record {
            let buckets = [0.0, 1.0, (writer + 1) as f64];
            chart.add(&tag_name(tag), "r", step, &buckets, &Stats::MISSING);
        }
    }
    let whole = chart.whole();
    let mut kept = Kept::new();
    let mut at = 0;
    for change in &whole.changes {
        let held = kept.entry(change.tag.clone()).or_default();
        for row in at..at + change.rows {
            let total: f32 = whole.counts[row * bins..(row + 1) * bins].iter().sum();
            held.push((whole.steps[row] as i64, total.round() as usize - 1));
        }
        at += change.rows;
    }
    kept
}

/// Each tag's steps live diagnosis holds once fed the values in writing order.
fn diagnosed(files: &[Vec<Record>]) -> BTreeMap<String, Vec<i64>> {
    let mut live = LiveDiagnosis::new("r", Options::default());
    let mut tags = Vec::new();
    for record in files.iter().flatten() {
        if let Record::Value { tag, step, writer } = *record {
            let counts = [(writer + 1) as f64];
            live.histogram(&tag_name(tag), step, &[0.0, 1.0], &counts, &Stats::MISSING);
            tags.push(tag_name(tag));
        }
    }
    tags.into_iter()
        .filter_map(|tag| Some((tag.clone(), live.steps(&tag)?.to_vec())))
        .collect()
}

fn steps_of(kept: &Kept) -> BTreeMap<String, Vec<i64>> {
    kept.iter()
        .map(|(tag, kept)| (tag.clone(), kept.iter().map(|&(s, _)| s).collect()))
        .collect()
}

fn writer() -> impl Strategy<Value = Writer> {
    (0i64..12, 0i64..8, any::<bool>(), prop::bool::weighted(0.3)).prop_map(
        |(start, steps, new_file, session_start)| Writer {
            start,
            steps,
            new_file,
            session_start,
        },
    )
}

/// The surfaces that read the files, against the rule with START.
fn check_files(files: &[Vec<Record>], poll: usize, segment: u64) -> Result<(), TestCaseError> {
    let expected = reference(files, true);
    let logdir = temp_logdir();
    let follower = write_and_follow(&logdir, files, poll, segment);
    prop_assert_eq!(&loaded(&logdir), &expected, "load");
    prop_assert_eq!(&streamed(&logdir), &steps_of(&expected), "stream");
    prop_assert_eq!(&followed(&follower), &expected, "follower");
    let tags: Vec<String> = expected.keys().cloned().collect();
    prop_assert_eq!(&carded(&follower, &tags), &expected, "card");
    fs::remove_dir_all(&logdir).unwrap();
    Ok(())
}

/// The surfaces a writer feeds, against the rule over the values alone.
fn check_live(files: &[Vec<Record>], keep: usize) -> Result<(), TestCaseError> {
    let expected = reference(files, false);
    prop_assert_eq!(&charted(files, 1000), &expected, "live chart");
    prop_assert_eq!(&diagnosed(files), &steps_of(&expected), "live diagnosis");
    // Thinned, the chart holds each tag's last value, and only values the rule keeps.
    for (tag, held) in charted(files, keep) {
        let kept = &expected[&tag];
        prop_assert_eq!(
            held.last(),
            kept.last(),
            "thinned live chart's last of {}",
            tag
        );
        prop_assert!(
            held.windows(2).all(|w| w[0].0 < w[1].0) && held.iter().all(|h| kept.contains(h)),
            "thinned live chart of {} holds {:?} of {:?}",
            tag,
            held,
            kept
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_surface_keeps_the_steps_of_the_restart_rule(
        periods in prop::collection::vec(1i64..4, 1..4),
        writers in prop::collection::vec(writer(), 1..5),
        poll in 1usize..10,
        segment in 40u64..400,
        keep in 2usize..6,
    ) {
        let files = written(&periods, &writers);
        check_files(&files, poll, segment)?;
        check_live(&files, keep)?;
    }
}

#[test]
fn a_start_drops_every_tag_from_its_step_in_every_file_surface() {
    let writers = [
        Writer {
            start: 0,
            steps: 6,
            new_file: true,
            session_start: false,
        },
        Writer {
            start: 3,
            steps: 1,
            new_file: true,
            session_start: true,
        },
    ];
    let files = written(&[1, 2], &writers);
    let expected = reference(&files, true);
    assert_eq!(expected["h0"], vec![(0, 0), (1, 0), (2, 0), (3, 1)]);
    assert_eq!(expected["h1"], vec![(0, 0), (2, 0)]);
    check_files(&files, 3, 100).unwrap();
    check_live(&files, 2).unwrap();
}

/// A step logged again in the same file within `BURST_GAP_SECONDS` is not a restart to
/// the surfaces that read files but a second tag (`shared_tags`, Keras 3's weights of
/// one short name): found by the proptest when every value was written at its step's
/// second. The file surfaces agree on it among themselves; a writer's live surfaces,
/// which see no wall times, read it as a restart.
#[test]
fn a_step_logged_again_within_a_second_in_one_file_is_a_shared_tag_to_every_file_surface() {
    let logdir = temp_logdir();
    let path = logdir.join("r").join(file_name(0));
    let value = |step, writer: usize, plugin| {
        tensor_histogram_at(
            "h0",
            step,
            step as f64,
            &[0.0, 1.0, (writer + 1) as f64],
            plugin,
        )
    };
    fs::write(
        &path,
        [value(4, 0, true), value(6, 0, false), value(6, 1, false)].concat(),
    )
    .unwrap();
    let expected = Kept::from([
        ("h0".to_owned(), vec![(4, 0), (6, 0)]),
        ("h0 (2)".to_owned(), vec![(6, 1)]),
    ]);
    assert_eq!(loaded(&logdir), expected);
    assert_eq!(streamed(&logdir), steps_of(&expected));
    let follower = Mutex::new(RunLoader::new("r", shared_buckets(1 << 30)));
    read(&follower, &[path], 40, Duration::from_secs(60));
    assert_eq!(followed(&follower), expected);
    fs::remove_dir_all(&logdir).unwrap();
}
