//! NumPy arrays of every supported dtype, read in place, and the 16-bit float their
//! uint16s may hold: what `histogram` and `histograms` bin.

use std::borrow::Cow;

use numpy::ndarray::Dimension;
use numpy::{Element, PyReadonlyArray, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

use crate::bins::binning::Values;
use crate::histograms::float16::HalfFloat;

/// An `encoding` argument: `"float16"` or `"bfloat16"` (None, for an array read as
/// it is, is `Option<HalfFloat>`).
impl<'a, 'py> FromPyObject<'a, 'py> for HalfFloat {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let problem = || format!("encoding must be \"float16\", \"bfloat16\" or None, got {obj:?}");
        let name: PyBackedStr = obj.extract().map_err(|_| PyTypeError::new_err(problem()))?;
        HalfFloat::from_name(&name).ok_or_else(|| PyValueError::new_err(problem()))
    }
}

/// The dtypes binned in place; float16 and bfloat16 come as uint16 bits.
#[derive(FromPyObject)]
pub enum Array<'py> {
    F64(PyReadonlyArrayDyn<'py, f64>),
    F32(PyReadonlyArrayDyn<'py, f32>),
    I8(PyReadonlyArrayDyn<'py, i8>),
    I16(PyReadonlyArrayDyn<'py, i16>),
    I32(PyReadonlyArrayDyn<'py, i32>),
    I64(PyReadonlyArrayDyn<'py, i64>),
    U8(PyReadonlyArrayDyn<'py, u8>),
    U16(PyReadonlyArrayDyn<'py, u16>),
    U32(PyReadonlyArrayDyn<'py, u32>),
    U64(PyReadonlyArrayDyn<'py, u64>),
    Bool(PyReadonlyArrayDyn<'py, bool>),
}

/// One array's elements in C order, borrowed when they already lie that way.
pub enum Data<'a> {
    F64(Cow<'a, [f64]>),
    F32(Cow<'a, [f32]>),
    Half(Cow<'a, [u16]>, HalfFloat),
    I8(Cow<'a, [i8]>),
    I16(Cow<'a, [i16]>),
    I32(Cow<'a, [i32]>),
    I64(Cow<'a, [i64]>),
    U8(Cow<'a, [u8]>),
    U16(Cow<'a, [u16]>),
    U32(Cow<'a, [u32]>),
    U64(Cow<'a, [u64]>),
    Bool(Cow<'a, [bool]>),
}

impl Data<'_> {
    pub fn values(&self) -> Values<'_> {
        match self {
            Data::F64(d) => Values::F64(d),
            Data::F32(d) => Values::F32(d),
            Data::Half(d, half) => Values::Half(d, *half),
            Data::I8(d) => Values::I8(d),
            Data::I16(d) => Values::I16(d),
            Data::I32(d) => Values::I32(d),
            Data::I64(d) => Values::I64(d),
            Data::U8(d) => Values::U8(d),
            Data::U16(d) => Values::U16(d),
            Data::U32(d) => Values::U32(d),
            Data::U64(d) => Values::U64(d),
            Data::Bool(d) => Values::Bool(d),
        }
    }
}

/// The array's elements in C order: borrowed when they lie that way, copied otherwise.
pub fn c_order<'a, T: Element + Copy, D: Dimension>(
    array: &'a PyReadonlyArray<'_, T, D>,
) -> Cow<'a, [T]> {
    match array.as_slice() {
        Ok(slice) if array.is_c_contiguous() => Cow::Borrowed(slice),
        _ => Cow::Owned(array.as_array().iter().copied().collect()),
    }
}

/// `array`'s elements as the core reads them: with `encoding`, a uint16 array's
/// elements are that 16-bit float's bits, and any other dtype is `Err(encoding)`.
pub fn data<'a>(array: &'a Array<'_>, encoding: Option<HalfFloat>) -> Result<Data<'a>, HalfFloat> {
    Ok(match (array, encoding) {
        (Array::U16(a), Some(half)) => Data::Half(c_order(a), half),
        (_, Some(half)) => return Err(half),
        (Array::F64(a), None) => Data::F64(c_order(a)),
        (Array::F32(a), None) => Data::F32(c_order(a)),
        (Array::I8(a), None) => Data::I8(c_order(a)),
        (Array::I16(a), None) => Data::I16(c_order(a)),
        (Array::I32(a), None) => Data::I32(c_order(a)),
        (Array::I64(a), None) => Data::I64(c_order(a)),
        (Array::U8(a), None) => Data::U8(c_order(a)),
        (Array::U16(a), None) => Data::U16(c_order(a)),
        (Array::U32(a), None) => Data::U32(c_order(a)),
        (Array::U64(a), None) => Data::U64(c_order(a)),
        (Array::Bool(a), None) => Data::Bool(c_order(a)),
    })
}

impl Array<'_> {
    /// The array's shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            Array::F64(a) => a.shape(),
            Array::F32(a) => a.shape(),
            Array::I8(a) => a.shape(),
            Array::I16(a) => a.shape(),
            Array::I32(a) => a.shape(),
            Array::I64(a) => a.shape(),
            Array::U8(a) => a.shape(),
            Array::U16(a) => a.shape(),
            Array::U32(a) => a.shape(),
            Array::U64(a) => a.shape(),
            Array::Bool(a) => a.shape(),
        }
    }
}
