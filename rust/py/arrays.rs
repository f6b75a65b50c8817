//! NumPy arrays of every supported dtype, read in place: what `histogram` and `histograms` bin.

use std::borrow::Cow;

use numpy::{Element, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::bins::binning::Values;

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
    F16Bits(Cow<'a, [u16]>),
    Bf16Bits(Cow<'a, [u16]>),
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
            Data::F16Bits(d) => Values::F16Bits(d),
            Data::Bf16Bits(d) => Values::Bf16Bits(d),
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
pub fn c_order<'a, T: Element + Copy>(array: &'a PyReadonlyArrayDyn<'_, T>) -> Cow<'a, [T]> {
    match array.as_slice() {
        Ok(slice) if array.is_c_contiguous() => Cow::Borrowed(slice),
        _ => Cow::Owned(array.as_array().iter().copied().collect()),
    }
}

/// `array`'s elements as the core reads them; `encoding` "float16" or "bfloat16" reads
/// a uint16 array as those types' bits, "" as it is. `index` names the array in errors.
pub fn data<'a>(array: &'a Array<'_>, encoding: &str, index: usize) -> PyResult<Data<'a>> {
    Ok(match (array, encoding) {
        (Array::U16(a), "float16") => Data::F16Bits(c_order(a)),
        (Array::U16(a), "bfloat16") => Data::Bf16Bits(c_order(a)),
        (_, "float16" | "bfloat16") => {
            return Err(PyTypeError::new_err(format!(
                "values[{index}]: {encoding} values must come as their bits in a uint16 array"
            )))
        }
        (_, "") => match array {
            Array::F64(a) => Data::F64(c_order(a)),
            Array::F32(a) => Data::F32(c_order(a)),
            Array::I8(a) => Data::I8(c_order(a)),
            Array::I16(a) => Data::I16(c_order(a)),
            Array::I32(a) => Data::I32(c_order(a)),
            Array::I64(a) => Data::I64(c_order(a)),
            Array::U8(a) => Data::U8(c_order(a)),
            Array::U16(a) => Data::U16(c_order(a)),
            Array::U32(a) => Data::U32(c_order(a)),
            Array::U64(a) => Data::U64(c_order(a)),
            Array::Bool(a) => Data::Bool(c_order(a)),
        },
        (_, other) => {
            return Err(PyValueError::new_err(format!(
                "encodings[{index}] must be \"\", \"float16\" or \"bfloat16\", got {other:?}"
            )))
        }
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
