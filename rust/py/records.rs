//! The typed records that cross into Python: frozen, fields read-only, arrays handed over without copies.

use std::collections::BTreeMap;

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyTuple};

use crate::bins::binning::Histogram;
use crate::bins::chart::Chart;
use crate::bins::rebin::Rebinned;
use crate::histograms::series::{check_series_layout, Series};
use crate::histograms::stats::Stats;
use crate::logdir::discover::RunFiles;
use crate::logdir::load::{Logdir, LogdirCharts};
use crate::logdir::merge::MergedRun;
use crate::read::report::FileReport;

type Array1<T> = Py<PyArray1<T>>;
type Array2 = Py<PyArray2<f64>>;

/// `flat` as a NumPy array of `columns` columns.
pub fn matrix(py: Python<'_>, flat: Vec<f64>, columns: usize) -> PyResult<Array2> {
    let rows = flat.len().checked_div(columns).unwrap_or(0);
    Ok(flat.into_pyarray(py).reshape([rows, columns])?.unbind())
}

/// Per-step statistics as a `(steps, len(STAT_NAMES))` array.
pub fn stats_matrix(py: Python<'_>, stats: &[Stats]) -> PyResult<Array2> {
    let flat: Vec<f64> = stats.iter().flat_map(|st| st.to_array()).collect();
    matrix(py, flat, Stats::NAMES.len())
}

/// Every step of one histogram tag of one run, buckets as stored.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct SeriesRecord {
    pub run: String,
    pub tag: String,
    /// int64, strictly increasing.
    pub steps: Array1<i64>,
    pub wall_times: Array1<f64>,
    /// Every step's buckets as (left, right, count) rows, one after the other.
    pub buckets: Array2,
    /// Step `i` holds rows `offsets[i]:offsets[i + 1]` of `buckets`.
    pub offsets: Array1<i64>,
    /// `(steps, len(STAT_NAMES))`, NaN where the writer stored none.
    pub stats: Array2,
}

#[pymethods]
impl SeriesRecord {
    /// A series from arrays, checked to make one (see `HistogramSeries`).
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        run: String,
        tag: String,
        steps: Bound<'_, PyArray1<i64>>,
        wall_times: Bound<'_, PyArray1<f64>>,
        buckets: Bound<'_, PyArray2<f64>>,
        offsets: Bound<'_, PyArray1<i64>>,
        stats: Bound<'_, PyArray2<f64>>,
    ) -> PyResult<Self> {
        let [rows, columns] = buckets.shape() else {
            unreachable!("two dimensions by type")
        };
        if *columns != 3 {
            return Err(PyValueError::new_err(format!(
                "flat_buckets must have 3 columns (left, right, count), got {columns}"
            )));
        }
        let stats_shape = (stats.shape()[0], stats.shape()[1]);
        check_series_layout(
            &steps.to_vec()?,
            wall_times.len(),
            *rows,
            &offsets.to_vec()?,
            stats_shape,
        )
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(SeriesRecord {
            run,
            tag,
            steps: steps.unbind(),
            wall_times: wall_times.unbind(),
            buckets: buckets.unbind(),
            offsets: offsets.unbind(),
            stats: stats.unbind(),
        })
    }
}

impl SeriesRecord {
    /// Its offsets as indices into the buckets' rows, none negative.
    pub fn row_offsets(&self, py: Python<'_>) -> PyResult<Vec<usize>> {
        let offsets = self.offsets.bind(py).readonly();
        offsets
            .as_array()
            .iter()
            .map(|&o| usize::try_from(o))
            .collect::<Result<_, _>>()
            .map_err(|_| PyValueError::new_err("offsets must not be negative"))
    }

    pub fn new(py: Python<'_>, s: Series) -> PyResult<Self> {
        let offsets: Vec<i64> = s.offsets.iter().map(|&o| o as i64).collect();
        Ok(SeriesRecord {
            stats: stats_matrix(py, &s.stats)?,
            buckets: matrix(py, s.buckets, 3)?,
            offsets: offsets.into_pyarray(py).unbind(),
            steps: s.steps.into_pyarray(py).unbind(),
            wall_times: s.wall_times.into_pyarray(py).unbind(),
            run: s.run,
            tag: s.tag,
        })
    }
}

/// A series record's arrays, read in place.
pub struct BorrowedSeries<'py> {
    pub run: String,
    pub tag: String,
    pub steps: PyReadonlyArray1<'py, i64>,
    pub rows: PyReadonlyArray2<'py, f64>,
    pub offsets: Vec<usize>,
    pub stats: Vec<Stats>,
}

impl<'py> BorrowedSeries<'py> {
    pub fn new(py: Python<'py>, record: &SeriesRecord) -> PyResult<Self> {
        let stats = record.stats.bind(py).readonly();
        let stats = stats
            .as_array()
            .rows()
            .into_iter()
            .map(|row| {
                let mut values = [f64::NAN; 8];
                values.iter_mut().zip(row).for_each(|(v, &x)| *v = x);
                Stats::from_array(values)
            })
            .collect();
        let offsets = record.row_offsets(py)?;
        Ok(BorrowedSeries {
            run: record.run.clone(),
            tag: record.tag.clone(),
            steps: record.steps.bind(py).readonly(),
            rows: record.buckets.bind(py).readonly(),
            offsets,
            stats,
        })
    }
}

/// One tag of one run as a ridgeline draws it: kept steps, shared equal bins.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct ChartRecord {
    pub run: String,
    pub tag: String,
    pub steps: Array1<i64>,
    pub wall_times: Array1<f64>,
    /// `bins + 1` increasing edges.
    pub edges: Array1<f64>,
    /// `(steps, bins)` counts.
    pub counts: Array2,
    /// Buckets left out because an edge or the count was NaN or infinite.
    pub nonfinite_buckets: usize,
    /// The sum of the finite counts of those buckets.
    pub nonfinite_count: f64,
}

impl ChartRecord {
    pub fn new(py: Python<'_>, c: Chart) -> PyResult<Self> {
        let Rebinned {
            edges,
            counts,
            nonfinite_buckets,
            nonfinite_count,
        } = c.bins;
        Ok(ChartRecord {
            counts: matrix(py, counts, edges.len().saturating_sub(1))?,
            edges: edges.into_pyarray(py).unbind(),
            steps: c.steps.into_pyarray(py).unbind(),
            wall_times: c.wall_times.into_pyarray(py).unbind(),
            run: c.run,
            tag: c.tag,
            nonfinite_buckets,
            nonfinite_count,
        })
    }
}

/// One histogram's statistics by name (the core's `Stats`); NaN where unknown.
#[pyclass(
    frozen,
    get_all,
    eq,
    from_py_object,
    name = "Stats",
    module = "histoscope._core"
)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatsRecord {
    /// The number (total weight) of finite values, in the bins or outside them.
    pub count: f64,
    /// The smallest finite value (with nonzero weight).
    pub min: f64,
    /// The largest finite value (with nonzero weight).
    pub max: f64,
    /// The (weighted) mean of the finite values.
    pub mean: f64,
    /// The (weighted) population standard deviation of the finite values.
    pub std: f64,
    /// The number (total weight) of NaN and infinite values.
    pub nonfinite: f64,
    /// The number (total weight) of finite values below the first edge.
    pub below: f64,
    /// The number (total weight) of finite values above the last edge.
    pub above: f64,
}

#[pymethods]
impl StatsRecord {
    #[new]
    #[pyo3(signature = (*, count, min, max, mean, std, nonfinite, below, above))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        count: f64,
        min: f64,
        max: f64,
        mean: f64,
        std: f64,
        nonfinite: f64,
        below: f64,
        above: f64,
    ) -> Self {
        StatsRecord {
            count,
            min,
            max,
            mean,
            std,
            nonfinite,
            below,
            above,
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let fields = self
            .by_name(py)?
            .iter()
            .map(|(name, value)| Ok(format!("{name}={}", value.repr()?)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(format!("Stats({})", fields.join(", ")))
    }

    /// Pickles as it is built: by keyword.
    fn __getnewargs_ex__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyDict>)> {
        let keywords = PyDict::new(py);
        for (name, value) in self.by_name(py)? {
            keywords.set_item(name, value)?;
        }
        Ok((PyTuple::empty(py), keywords))
    }
}

impl StatsRecord {
    /// Each field's name (`STAT_NAMES`) and value, as Python floats.
    fn by_name<'py>(&self, py: Python<'py>) -> PyResult<Vec<(&'static str, Bound<'py, PyFloat>)>> {
        let values = Stats::from(*self).to_array();
        Ok(Stats::NAMES
            .into_iter()
            .zip(values)
            .map(|(name, value)| (name, PyFloat::new(py, value)))
            .collect())
    }
}

impl From<Stats> for StatsRecord {
    fn from(s: Stats) -> Self {
        let Stats {
            count,
            min,
            max,
            mean,
            std,
            nonfinite,
            below,
            above,
        } = s;
        StatsRecord {
            count,
            min,
            max,
            mean,
            std,
            nonfinite,
            below,
            above,
        }
    }
}

impl From<StatsRecord> for Stats {
    fn from(s: StatsRecord) -> Self {
        let StatsRecord {
            count,
            min,
            max,
            mean,
            std,
            nonfinite,
            below,
            above,
        } = s;
        Stats {
            count,
            min,
            max,
            mean,
            std,
            nonfinite,
            below,
            above,
        }
    }
}

/// The edges, counts and statistics of one binned array.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct BinnedHistogram {
    /// `len(counts) + 1` increasing edges.
    pub edges: Array1<f64>,
    /// The number (or weight) of values in each bin.
    pub counts: Array1<f64>,
    /// The statistics of the values, by name.
    pub stats: Py<StatsRecord>,
}

impl BinnedHistogram {
    pub fn new(py: Python<'_>, h: Histogram) -> PyResult<Self> {
        Ok(BinnedHistogram {
            edges: h.edges.into_pyarray(py).unbind(),
            counts: h.counts.into_pyarray(py).unbind(),
            stats: Py::new(py, StatsRecord::from(h.stats))?,
        })
    }
}

/// What reading one events file had to skip, and whether it ended mid-record.
#[pyclass(frozen, get_all, name = "FileReport", module = "histoscope._core")]
pub struct FileReportRecord {
    pub path: String,
    /// One line naming the file, what was skipped and the byte offsets.
    pub summary: String,
    /// Whether anything was skipped that a user must be told about.
    pub has_problems: bool,
    /// Where a record cut off at the end of the file starts.
    pub incomplete_tail: Option<u64>,
    /// Whether this is its run's newest file, the only one a writer may still be writing.
    pub newest: bool,
    /// What the cut-off record means, when there is one.
    pub tail_note: Option<String>,
    /// Which tags were written several times a step and kept apart by position.
    pub shared_note: Option<String>,
}

impl From<FileReport> for FileReportRecord {
    fn from(r: FileReport) -> Self {
        FileReportRecord {
            path: r.path.display().to_string(),
            summary: r.summary(),
            has_problems: r.has_problems(),
            incomplete_tail: r.incomplete_tail,
            newest: r.newest,
            tail_note: r.tail_note(),
            shared_note: r.shared_note(),
        }
    }
}

pub fn reports(reports: Vec<FileReport>) -> Vec<FileReportRecord> {
    reports.into_iter().map(FileReportRecord::from).collect()
}

pub fn series_records(py: Python<'_>, series: Vec<Series>) -> PyResult<Vec<Py<SeriesRecord>>> {
    series
        .into_iter()
        .map(|s| Py::new(py, SeriesRecord::new(py, s)?))
        .collect()
}

/// The histograms of a log directory, or of the runs read so far.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct LogdirRecord {
    /// Every run found, with or without histograms, sorted by name.
    pub runs: Vec<String>,
    /// One series per run and tag, by run, then tag.
    pub series: Vec<Py<SeriesRecord>>,
    /// One report per file read, in run and file order.
    pub reports: Vec<Py<FileReportRecord>>,
    /// Per run read, how many histogram values a restart dropped or logged again.
    pub superseded: BTreeMap<String, usize>,
}

impl LogdirRecord {
    pub fn new(py: Python<'_>, logdir: Logdir) -> PyResult<Self> {
        Ok(LogdirRecord {
            runs: logdir.runs,
            series: series_records(py, logdir.series)?,
            reports: py_list(py, reports(logdir.reports))?,
            superseded: logdir.superseded,
        })
    }
}

/// A log directory's histograms as charts.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct ChartsRecord {
    pub runs: Vec<String>,
    pub charts: Vec<Py<ChartRecord>>,
    pub reports: Vec<Py<FileReportRecord>>,
    pub superseded: BTreeMap<String, usize>,
}

impl ChartsRecord {
    pub fn new(py: Python<'_>, charted: LogdirCharts) -> PyResult<Self> {
        let charts = charted
            .charts
            .into_iter()
            .map(|c| Py::new(py, ChartRecord::new(py, c)?))
            .collect::<PyResult<_>>()?;
        Ok(ChartsRecord {
            runs: charted.runs,
            charts,
            reports: py_list(py, reports(charted.reports))?,
            superseded: charted.superseded,
        })
    }
}

/// One run's series from its files, what they reported, and what restarts superseded.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct MergedRecord {
    pub series: Vec<Py<SeriesRecord>>,
    pub reports: Vec<Py<FileReportRecord>>,
    pub superseded: usize,
}

impl MergedRecord {
    pub fn new(py: Python<'_>, merged: MergedRun) -> PyResult<Self> {
        Ok(MergedRecord {
            series: series_records(py, merged.series)?,
            reports: py_list(py, reports(merged.reports))?,
            superseded: merged.superseded,
        })
    }
}

/// A run: its name and its events files in reading order.
#[pyclass(frozen, get_all, name = "RunFiles", module = "histoscope._core")]
pub struct RunFilesRecord {
    pub name: String,
    pub files: Vec<String>,
    /// Each file's size when listed, where the listing gave it.
    pub sizes: Vec<Option<u64>>,
}

impl From<RunFiles> for RunFilesRecord {
    fn from(r: RunFiles) -> Self {
        RunFilesRecord {
            name: r.name,
            files: r
                .files
                .into_iter()
                .map(|f| f.to_string_lossy().into_owned())
                .collect(),
            sizes: r.sizes,
        }
    }
}

fn py_list<T: pyo3::PyClass + Into<pyo3::PyClassInitializer<T>>>(
    py: Python<'_>,
    items: Vec<T>,
) -> PyResult<Vec<Py<T>>> {
    items.into_iter().map(|item| Py::new(py, item)).collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SeriesRecord>()?;
    m.add_class::<StatsRecord>()?;
    m.add_class::<BinnedHistogram>()?;
    m.add_class::<ChartRecord>()?;
    m.add_class::<FileReportRecord>()?;
    m.add_class::<LogdirRecord>()?;
    m.add_class::<ChartsRecord>()?;
    m.add_class::<MergedRecord>()?;
    m.add_class::<RunFilesRecord>()?;
    Ok(())
}
