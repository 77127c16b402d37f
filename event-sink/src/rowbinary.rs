//! ClickHouse's RowBinary format, written straight into a byte buffer: what lets the sink
//! encode a row once, when its message arrives, instead of keeping the decoded event (or
//! decoding the body again) until the flush.
//!
//! [`encode`] serializes any row of [`crate::rows`] (their `Serialize` derives are the one
//! description of the columns, shared with JSON) with the encodings the `clickhouse`
//! crate uses: integers and floats little-endian, `bool` as one byte, strings and bytes
//! with a LEB128 length, `Option` as a Nullable null flag (1 = NULL) before the value,
//! sequences as `Array` (LEB128 count), tuples and structs as their fields in order.
//! Maps, unit types and enum variants have no RowBinary meaning here and are errors.
//!
//! Pure encoding: which rows go into which insert is the batch's and the writer's.

use serde::ser::{self, Impossible, Serialize};

/// Why a value has no RowBinary encoding. The rows of [`crate::rows`] never fail; an
/// error means a row type was given a field of an unsupported kind.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// A serde data kind RowBinary rows do not use.
    #[error("RowBinary cannot encode {0}")]
    Unsupported(&'static str),
    /// A sequence whose length is not known up front (RowBinary writes it first).
    #[error("RowBinary needs the length of a sequence before its elements")]
    UnknownLength,
    /// A `Serialize` implementation reported an error.
    #[error("{0}")]
    Custom(String),
}

impl ser::Error for EncodeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        EncodeError::Custom(msg.to_string())
    }
}

/// Appends `row` to `out` as one RowBinary row. On error `out` may hold part of the row:
/// callers truncate it back.
pub fn encode<T: Serialize + ?Sized>(row: &T, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    row.serialize(&mut Encoder { out })
}

/// LEB128, as RowBinary writes string lengths and array sizes.
fn put_leb128(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// The serializer: a cursor at the end of the output buffer.
struct Encoder<'o> {
    out: &'o mut Vec<u8>,
}

macro_rules! little_endian {
    ($($method:ident: $ty:ty),*) => {
        $(
            fn $method(self, v: $ty) -> Result<(), EncodeError> {
                self.out.extend_from_slice(&v.to_le_bytes());
                Ok(())
            }
        )*
    };
}

impl<'a, 'o> ser::Serializer for &'a mut Encoder<'o> {
    type Ok = ();
    type Error = EncodeError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Impossible<(), EncodeError>;
    type SerializeMap = Impossible<(), EncodeError>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), EncodeError>;

    fn is_human_readable(&self) -> bool {
        false
    }

    little_endian!(
        serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_u128: u128, serialize_f32: f32, serialize_f64: f64
    );

    fn serialize_bool(self, v: bool) -> Result<(), EncodeError> {
        self.out.push(u8::from(v));
        Ok(())
    }

    fn serialize_char(self, _v: char) -> Result<(), EncodeError> {
        Err(EncodeError::Unsupported("char"))
    }

    fn serialize_str(self, v: &str) -> Result<(), EncodeError> {
        self.serialize_bytes(v.as_bytes())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), EncodeError> {
        put_leb128(self.out, v.len() as u64);
        self.out.extend_from_slice(v);
        Ok(())
    }

    fn serialize_none(self) -> Result<(), EncodeError> {
        self.out.push(1);
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), EncodeError> {
        self.out.push(0);
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), EncodeError> {
        Err(EncodeError::Unsupported("unit"))
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), EncodeError> {
        Err(EncodeError::Unsupported("a unit struct"))
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
    ) -> Result<(), EncodeError> {
        Err(EncodeError::Unsupported("an enum variant"))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), EncodeError> {
        Err(EncodeError::Unsupported("an enum variant"))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self, EncodeError> {
        put_leb128(self.out, len.ok_or(EncodeError::UnknownLength)? as u64);
        Ok(self)
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self, EncodeError> {
        Ok(self)
    }

    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self, EncodeError> {
        Ok(self)
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, EncodeError> {
        Err(EncodeError::Unsupported("an enum variant"))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, EncodeError> {
        Err(EncodeError::Unsupported("a map"))
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, EncodeError> {
        Ok(self)
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, EncodeError> {
        Err(EncodeError::Unsupported("an enum variant"))
    }
}

/// Sequences, tuples and structs: their elements one after another.
macro_rules! elements {
    ($($trait:ident :: $method:ident),*) => {
        $(
            impl ser::$trait for &mut Encoder<'_> {
                type Ok = ();
                type Error = EncodeError;

                fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
                    value.serialize(&mut **self)
                }

                fn end(self) -> Result<(), EncodeError> {
                    Ok(())
                }
            }
        )*
    };
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

impl ser::SerializeStruct for &mut Encoder<'_> {
    type Ok = ();
    type Error = EncodeError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _key: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        value.serialize(&mut **self)
    }

    fn end(self) -> Result<(), EncodeError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;

    #[derive(Serialize)]
    struct Sample<'a> {
        flag: bool,
        count: u32,
        delta: i64,
        ratio: f64,
        text: &'a str,
        missing: Option<u64>,
        present: Option<&'a str>,
        list: Vec<&'a str>,
        #[serde(with = "clickhouse::serde::uuid")]
        id: uuid::Uuid,
    }

    #[test]
    fn rows_are_encoded_as_clickhouse_reads_them() {
        let long = "x".repeat(200);
        let row = Sample {
            flag: true,
            count: 7,
            delta: -2,
            ratio: 0.5,
            text: &long,
            missing: None,
            present: Some("é"),
            list: vec!["a", "bc"],
            id: uuid::Uuid::from_u64_pair(1, 2),
        };
        let mut out = Vec::new();
        encode(&row, &mut out).expect("encodable");
        let mut expected = vec![1u8];
        expected.extend(7u32.to_le_bytes());
        expected.extend((-2i64).to_le_bytes());
        expected.extend(0.5f64.to_le_bytes());
        expected.extend([0xc8, 0x01]); // 200 as LEB128
        expected.extend(long.as_bytes());
        expected.push(1); // NULL
        expected.extend([0, 2, 0xc3, 0xa9]); // not NULL, 2 bytes of UTF-8
        expected.extend([2, 1, b'a', 2, b'b', b'c']);
        expected.extend(1u64.to_le_bytes());
        expected.extend(2u64.to_le_bytes());
        assert_eq!(out, expected);
    }

    #[test]
    fn maps_are_refused() {
        let mut out = Vec::new();
        let map = std::collections::BTreeMap::from([(1, 2)]);
        assert!(matches!(
            encode(&map, &mut out),
            Err(EncodeError::Unsupported("a map"))
        ));
    }
}
