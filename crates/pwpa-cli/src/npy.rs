//! A small `.npy` reader and writer (format versions 1.0, 2.0 and 3.0) and raw
//! little-endian arrays.
//!
//! Only what `pwpa eval` needs: C-order, little-endian (or byte-order-free)
//! arrays of f32, f16 and — for reading sample data — f64. Every malformed file
//! gets an error naming the file and the problem.

use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};
use pwpa::DType;

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Element type of an array file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayDType {
    /// One of pwpa's element types.
    Elem(DType),
    /// IEEE binary64 (read only, for sample data).
    F64,
}

impl ArrayDType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            ArrayDType::Elem(d) => d.size(),
            ArrayDType::F64 => 8,
        }
    }

    fn descr(self) -> Result<&'static str> {
        Ok(match self {
            ArrayDType::Elem(DType::F32) => "<f4",
            ArrayDType::Elem(DType::F16) => "<f2",
            ArrayDType::F64 => "<f8",
            ArrayDType::Elem(DType::BF16) => bail!(
                "the .npy format has no bfloat16 dtype; write bf16 as a raw file (--raw) instead"
            ),
        })
    }
}

impl std::fmt::Display for ArrayDType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArrayDType::Elem(d) => write!(f, "{d}"),
            ArrayDType::F64 => f.write_str("f64"),
        }
    }
}

/// An array read from a file: element type, shape and the little-endian data bytes.
#[derive(Clone, Debug)]
pub struct Array {
    /// Element type.
    pub dtype: ArrayDType,
    /// Shape (empty for a 0-d array).
    pub shape: Vec<usize>,
    /// `product(shape) * dtype.size()` bytes, little-endian.
    pub data: Vec<u8>,
}

impl Array {
    /// The elements widened to f64 (exact for every supported type).
    pub fn to_f64(&self) -> Vec<f64> {
        match self.dtype {
            ArrayDType::F64 => self
                .data
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
            ArrayDType::Elem(DType::F32) => decode::<f32>(&self.data)
                .into_iter()
                .map(f64::from)
                .collect(),
            ArrayDType::Elem(DType::F16) => decode::<half::f16>(&self.data)
                .into_iter()
                .map(f64::from)
                .collect(),
            ArrayDType::Elem(DType::BF16) => decode::<half::bf16>(&self.data)
                .into_iter()
                .map(f64::from)
                .collect(),
        }
    }
}

/// Little-endian decoding and encoding of element types.
pub trait Le: Sized + Copy {
    /// Bytes per element.
    const SIZE: usize;
    /// From little-endian bytes (`SIZE` of them).
    fn from_le(b: &[u8]) -> Self;
    /// Appends the little-endian bytes.
    fn put_le(self, out: &mut Vec<u8>);
}

impl Le for f32 {
    const SIZE: usize = 4;
    fn from_le(b: &[u8]) -> Self {
        f32::from_le_bytes(b.try_into().unwrap())
    }
    fn put_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl Le for half::f16 {
    const SIZE: usize = 2;
    fn from_le(b: &[u8]) -> Self {
        half::f16::from_bits(u16::from_le_bytes(b.try_into().unwrap()))
    }
    fn put_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bits().to_le_bytes());
    }
}

impl Le for half::bf16 {
    const SIZE: usize = 2;
    fn from_le(b: &[u8]) -> Self {
        half::bf16::from_bits(u16::from_le_bytes(b.try_into().unwrap()))
    }
    fn put_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bits().to_le_bytes());
    }
}

/// Decodes little-endian bytes (a whole number of elements) into values.
pub fn decode<T: Le>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(T::SIZE).map(T::from_le).collect()
}

/// Encodes values as little-endian bytes.
pub fn encode<T: Le>(values: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * T::SIZE);
    for &v in values {
        v.put_le(&mut out);
    }
    out
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Reads a `.npy` file.
pub fn read_npy(path: &Path) -> Result<Array> {
    let bytes = read_file(path)?;
    parse_npy(&bytes).with_context(|| format!("{} is not a usable .npy file", path.display()))
}

/// Parses the bytes of a `.npy` file.
pub fn parse_npy(bytes: &[u8]) -> Result<Array> {
    let mut r = bytes;
    let (h, _) = read_header(&mut r)?;
    let nbytes = data_bytes(&h)?;
    let data = r;
    check_data_len(&h, nbytes, data.len() as u64)?;
    Ok(Array {
        dtype: h.dtype,
        shape: h.shape,
        data: data.to_vec(),
    })
}

/// A file that is not .npy at all (as opposed to a .npy file pwpa cannot use).
#[derive(Debug)]
struct NoMagic;
impl std::fmt::Display for NoMagic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("it does not start with the .npy magic string \\x93NUMPY")
    }
}
impl std::error::Error for NoMagic {}

/// Reads a `.npy` header from `r`, leaving it at the first data byte; also the bytes
/// read (the data's offset in the file).
fn read_header(r: &mut dyn Read) -> Result<(Header, u64)> {
    let mut pre = [0u8; 10];
    let got = read_full(r, &mut pre)?;
    if got < 10 || &pre[..6] != MAGIC {
        return Err(NoMagic.into());
    }
    let (major, minor) = (pre[6], pre[7]);
    let mut start = 10u64;
    let header_len = match major {
        1 => u16::from_le_bytes([pre[8], pre[9]]) as usize,
        2 | 3 => {
            start = 12;
            let mut more = [0u8; 2];
            if read_full(r, &mut more)? < 2 {
                bail!("truncated header");
            }
            u32::from_le_bytes([pre[8], pre[9], more[0], more[1]]) as usize
        }
        _ => bail!("unsupported .npy format version {major}.{minor}"),
    };
    // numpy writes headers of a few hundred bytes; a bound keeps a corrupt length from
    // allocating gigabytes.
    if header_len > 1 << 20 {
        bail!("a header of {header_len} bytes is not plausible (corrupt file?)");
    }
    let mut header = vec![0u8; header_len];
    if read_full(r, &mut header)? < header_len {
        bail!("truncated header (needs {header_len} bytes)");
    }
    let header =
        std::str::from_utf8(&header).map_err(|_| anyhow::anyhow!("the header is not text"))?;
    Ok((parse_header(header)?, start + header_len as u64))
}

/// The data after a header: exactly the `nbytes` its shape needs (`have` bytes are there).
fn check_data_len(h: &Header, nbytes: u64, have: u64) -> Result<()> {
    if have < nbytes {
        bail!(
            "truncated data: shape {:?} of {} needs {} bytes, the file has {} after its header",
            h.shape,
            h.dtype,
            nbytes,
            have
        );
    }
    if have > nbytes {
        bail!(
            "{} unexpected bytes after the data of shape {:?}",
            have - nbytes,
            h.shape
        );
    }
    Ok(())
}

/// Bytes of data the header's shape and dtype need.
fn data_bytes(h: &Header) -> Result<u64> {
    h.shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
        .and_then(|n| n.checked_mul(h.dtype.size() as u64))
        .filter(|&n| usize::try_from(n).is_ok())
        .ok_or_else(|| anyhow::anyhow!("shape {:?} is too large", h.shape))
}

/// Reads until `buf` is full or the input ends; the number of bytes read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(got)
}

/// An array file opened for reading its data in pieces (`pwpa eval`): element type,
/// shape, and a reader at the first data byte. A regular file's size is checked against
/// the shape when it is opened; a stream's (standard input, a pipe) as it is read.
pub struct ArrayReader {
    /// Element type.
    pub dtype: ArrayDType,
    /// Shape (empty for a 0-d array; one dimension for a raw file); `None` for a raw
    /// stream, whose length is known only at its end.
    pub shape: Option<Vec<usize>>,
    name: String,
    // Bytes of data still to read (`None`: a raw stream, read to its end).
    left: Option<u64>,
    // A .npy stream: check for bytes after the data at its end.
    check_end: bool,
    reader: Box<dyn Read>,
}

fn open_input(path: &Path) -> Result<(Box<dyn Read>, Option<u64>)> {
    if path.as_os_str() == "-" {
        return Ok((Box::new(std::io::stdin()), None));
    }
    let f = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let m = f
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if m.is_dir() {
        bail!("cannot read {}: it is a directory", path.display());
    }
    let size = m.is_file().then_some(m.len());
    Ok((
        Box::new(std::io::BufReader::with_capacity(1 << 20, f)),
        size,
    ))
}

fn input_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "standard input".to_string()
    } else {
        path.display().to_string()
    }
}

impl ArrayReader {
    /// Opens a `.npy` file (`-`: standard input) and reads its header.
    pub fn npy(path: &Path) -> Result<ArrayReader> {
        let name = input_name(path);
        let (mut reader, size) = open_input(path)?;
        // (`pwpa eval` reads standard input and names without .bin/.raw as .npy, even
        // with --dtype.)
        // The --raw hint only for a file that is not .npy at all: following it on a real
        // .npy (big-endian, Fortran order, truncated) would read its header as data.
        let what = || format!("{name} is not a usable .npy file");
        let (h, start) = read_header(&mut reader).map_err(|e| {
            if e.downcast_ref::<NoMagic>().is_some() {
                e.context(format!(
                    "{name} is not a .npy file (for raw little-endian values, pass --raw \
                     with --dtype f32|f16|bf16)"
                ))
            } else {
                e.context(what())
            }
        })?;
        let nbytes = data_bytes(&h).with_context(what)?;
        if let Some(size) = size {
            check_data_len(&h, nbytes, size.saturating_sub(start)).with_context(what)?;
        }
        Ok(ArrayReader {
            dtype: h.dtype,
            shape: Some(h.shape),
            name,
            left: Some(nbytes),
            check_end: size.is_none(),
            reader,
        })
    }

    /// Opens a raw little-endian file of `dtype` elements (`-`: standard input).
    pub fn raw(path: &Path, dtype: DType) -> Result<ArrayReader> {
        let name = input_name(path);
        let (reader, size) = open_input(path)?;
        let esize = dtype.size() as u64;
        if let Some(s) = size {
            if s % esize != 0 {
                bail!(
                    "{name}: {s} bytes is not a whole number of {dtype} elements ({esize} bytes each); the file is truncated or not {dtype}"
                );
            }
        }
        Ok(ArrayReader {
            dtype: ArrayDType::Elem(dtype),
            shape: size.map(|s| vec![(s / esize) as usize]),
            name,
            left: size,
            check_end: false,
            reader,
        })
    }

    /// Reads the next at most `max` elements into `buf` (their little-endian bytes);
    /// the number read, 0 at the end of the data.
    pub fn next_chunk(&mut self, buf: &mut Vec<u8>, max: usize) -> Result<usize> {
        let esize = self.dtype.size();
        let want = match self.left {
            Some(left) => left.min((max * esize) as u64) as usize,
            None => max * esize,
        };
        buf.resize(want, 0);
        let got = read_full(&mut self.reader, buf)
            .with_context(|| format!("cannot read {}", self.name))?;
        buf.truncate(got);
        match &mut self.left {
            Some(left) => {
                if got < want {
                    bail!(
                        "{}: the data ended {} bytes early (truncated?)",
                        self.name,
                        *left - got as u64
                    );
                }
                *left -= got as u64;
                if *left == 0 && self.check_end {
                    let mut one = [0u8; 1];
                    if read_full(&mut self.reader, &mut one)? > 0 {
                        bail!("{}: unexpected bytes after the data", self.name);
                    }
                }
            }
            None => {
                if got % esize != 0 {
                    bail!(
                        "{}: the input ended inside an element ({} bytes is not a whole number of {}-byte elements)",
                        self.name,
                        got % esize,
                        esize
                    );
                }
            }
        }
        Ok(got / esize)
    }
}

#[derive(Debug)]
struct Header {
    dtype: ArrayDType,
    shape: Vec<usize>,
}

/// A value of the header's Python literal: what numpy's `.npy` headers hold.
#[derive(Debug, PartialEq)]
enum Lit {
    Str(String),
    Bool(bool),
    Int(String),
    /// A tuple `( … )` (`true`) or a list `[ … ]` (`false`).
    Seq(Vec<Lit>, bool),
    /// Anything else (`None`, a number with a point, a nested dict): kept as its text.
    Other(String),
}

/// A small reader of the header's dict literal (`{'descr': '<f4', 'fortran_order': False,
/// 'shape': (3, 4), }`): strings, True/False, integers, tuples and lists, nested.
struct LitParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl LitParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            bail!(
                "malformed header: expected '{}' at byte {} of {:?}",
                c as char,
                self.i,
                String::from_utf8_lossy(self.s)
            )
        }
    }

    fn value(&mut self, depth: usize) -> Result<Lit> {
        if depth > 32 {
            bail!("malformed header: nested too deeply");
        }
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                let from = self.i + 1;
                let len = self.s[from..].iter().position(|&c| c == q || c == b'\\');
                match len.map(|n| (n, self.s[from + n])) {
                    Some((n, c)) if c == q => {
                        self.i = from + n + 1;
                        Ok(Lit::Str(
                            String::from_utf8_lossy(&self.s[from..from + n]).into(),
                        ))
                    }
                    Some(_) => bail!("malformed header: escapes in strings are not supported"),
                    None => bail!("malformed header: an unterminated string"),
                }
            }
            Some(open @ (b'(' | b'[')) => {
                let close = if open == b'(' { b')' } else { b']' };
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(close) {
                        self.i += 1;
                        return Ok(Lit::Seq(items, open == b'('));
                    }
                    items.push(self.value(depth + 1)?);
                    if self.peek() == Some(b',') {
                        self.i += 1;
                    } else {
                        self.expect(close)?;
                        return Ok(Lit::Seq(items, open == b'('));
                    }
                }
            }
            Some(_) => {
                let from = self.i;
                let mut nest = 0usize;
                while let Some(&c) = self.s.get(self.i) {
                    match c {
                        b'{' | b'(' | b'[' => nest += 1,
                        b'}' | b')' | b']' if nest > 0 => nest -= 1,
                        b',' | b'}' | b')' | b']' if nest == 0 => break,
                        _ => {}
                    }
                    self.i += 1;
                }
                let t = String::from_utf8_lossy(&self.s[from..self.i])
                    .trim()
                    .to_string();
                Ok(match t.as_str() {
                    "True" => Lit::Bool(true),
                    "False" => Lit::Bool(false),
                    _ if !t.is_empty()
                        && t.trim_end_matches('L').bytes().all(|c| c.is_ascii_digit()) =>
                    {
                        Lit::Int(t.trim_end_matches('L').to_string())
                    }
                    "" => bail!("malformed header: a missing value at byte {from}"),
                    _ => Lit::Other(t),
                })
            }
            None => bail!("malformed header: it ends early"),
        }
    }

    /// The dict's entries, in order; the whole text must be the dict.
    fn dict(mut self) -> Result<Vec<(String, Lit)>> {
        self.expect(b'{')?;
        let mut out: Vec<(String, Lit)> = Vec::new();
        loop {
            if self.peek() == Some(b'}') {
                self.i += 1;
                break;
            }
            let key = match self.value(1)? {
                Lit::Str(k) => k,
                other => bail!("malformed header: a key that is not a string: {other:?}"),
            };
            self.expect(b':')?;
            let v = self.value(1)?;
            if out.iter().any(|(k, _)| *k == key) {
                // (numpy would take the last; a header written so is malformed)
                bail!("malformed header: the key '{key}' appears more than once");
            }
            out.push((key, v));
            if self.peek() == Some(b',') {
                self.i += 1;
            } else {
                self.expect(b'}')?;
                break;
            }
        }
        if self.peek().is_some() {
            bail!("malformed header: text after the dict literal");
        }
        Ok(out)
    }
}

fn parse_header(header: &str) -> Result<Header> {
    let h = header.trim();
    if !h.starts_with('{') || !h.ends_with('}') {
        bail!("malformed header: not a dict literal: {h:?}");
    }
    let entries = LitParser {
        s: h.as_bytes(),
        i: 0,
    }
    .dict()?;
    // numpy refuses a header whose keys are not exactly these three.
    for (k, _) in &entries {
        if !["descr", "fortran_order", "shape"].contains(&k.as_str()) {
            bail!(
                "malformed header: unexpected key '{k}' (a .npy header has exactly 'descr', \
                 'fortran_order' and 'shape')"
            );
        }
    }
    let get = |key: &str| {
        entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .ok_or_else(|| anyhow::anyhow!("malformed header: no '{key}' field in {h:?}"))
    };
    let descr = match get("descr")? {
        Lit::Str(s) => s.as_str(),
        Lit::Seq(..) => bail!(
            "unsupported dtype: a structured array (record fields); pwpa reads float32 and \
             float16 arrays"
        ),
        _ => bail!("malformed header: 'descr' is not a string"),
    };
    let dtype = match descr {
        // (numpy also reads type names and '|' for these; the machine's order, little
        // endian everywhere pwpa runs.)
        "<f4" | "=f4" | "f4" | "|f4" | "float32" => ArrayDType::Elem(DType::F32),
        "<f2" | "=f2" | "f2" | "|f2" | "float16" => ArrayDType::Elem(DType::F16),
        "<f8" | "=f8" | "f8" | "|f8" | "float64" => ArrayDType::F64,
        ">f4" | ">f2" | ">f8" => {
            bail!("big-endian arrays ('{descr}') are not supported; save it little-endian")
        }
        other => bail!(
            "unsupported dtype '{other}' ({}); pwpa reads float32 and float16 arrays",
            describe_descr(other)
        ),
    };
    match get("fortran_order")? {
        Lit::Bool(false) => {}
        Lit::Bool(true) => {
            bail!("Fortran-order arrays are not supported; save a C-order (contiguous) array")
        }
        _ => bail!("malformed header: 'fortran_order' is neither True nor False"),
    }
    let dims = match get("shape")? {
        Lit::Seq(d, true) => d,
        _ => bail!("malformed header: 'shape' is not a tuple"),
    };
    let mut shape = Vec::new();
    for d in dims {
        match d {
            Lit::Int(t) => shape.push(t.parse::<usize>().map_err(|_| {
                anyhow::anyhow!("malformed header: the dimension {t} in 'shape' is too large")
            })?),
            other => bail!("malformed header: bad dimension {other:?} in 'shape'"),
        }
    }
    Ok(Header { dtype, shape })
}

fn describe_descr(d: &str) -> &'static str {
    // 'bfloat16' (a type name, not a descr) in its own words, not its first letter's
    // code ("boolean or byte"); the float type names are read in parse_header.
    if d == "bfloat16" {
        return "the .npy format has no bfloat16 dtype: write bf16 as a raw file (--raw) instead";
    }
    let kind = d.trim_start_matches(['<', '>', '=', '|']);
    match kind.chars().next() {
        Some('i') => "signed integer",
        Some('u') => "unsigned integer",
        Some('b') => "boolean or byte",
        Some('c') => "complex",
        Some('f') => "float of an unsupported width",
        Some('V') => "raw bytes",
        Some('U') | Some('S') => "string",
        Some('O') => "Python objects",
        _ => "unknown",
    }
}

/// The bytes of a `.npy` (version 1.0) file.
pub fn npy_bytes(dtype: ArrayDType, shape: &[usize], data: &[u8]) -> Result<Vec<u8>> {
    let shape_txt = match shape.len() {
        0 => "()".to_string(),
        1 => format!("({},)", shape[0]),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        dtype.descr()?,
        shape_txt
    );
    // Pad with spaces so that magic + version + length + header + '\n' is a multiple of 64.
    let used = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - used % 64) % 64));
    header.push('\n');
    if header.len() > u16::MAX as usize {
        bail!("shape {shape:?} makes a .npy header too long");
    }
    let mut out = Vec::with_capacity(10 + header.len() + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_shapes() {
        for shape in [vec![], vec![5], vec![2, 3], vec![1, 2, 2]] {
            let n: usize = shape.iter().product();
            let vals: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 1.0).collect();
            let bytes = npy_bytes(ArrayDType::Elem(DType::F32), &shape, &encode(&vals)).unwrap();
            // Header is aligned to 64 bytes.
            let hl = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!((10 + hl) % 64, 0);
            let a = parse_npy(&bytes).unwrap();
            assert_eq!(a.shape, shape);
            assert_eq!(decode::<f32>(&a.data), vals);
        }
    }

    #[test]
    fn numpy_style_headers_parse() {
        // As written by numpy 1.x/2.x (version 1.0 header).
        let h = "{'descr': '<f2', 'fortran_order': False, 'shape': (3, 4), }";
        let p = parse_header(h).unwrap();
        assert_eq!(p.dtype, ArrayDType::Elem(DType::F16));
        assert_eq!(p.shape, vec![3, 4]);
        assert!(parse_header(
            "{'descr': '<f8', 'descr': '<f4', 'fortran_order': False, 'shape': (7,), }"
        )
        .unwrap_err()
        .to_string()
        .contains("appears more than once"));
        for (bad, what) in [
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (7,), 'extra': 1}",
                "unexpected key 'extra'",
            ),
            (
                "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (7,)}",
                "structured",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': [7]}",
                "not a tuple",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (7.5,)}",
                "bad dimension",
            ),
            (
                "{'descr': '<f4', 'fortran_order': 0, 'shape': (7,)}",
                "neither True",
            ),
            ("{'descr': '<f4', 'fortran_order': False}", "no 'shape'"),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (7,)} x",
                "not a dict",
            ),
            (
                "{'descr': '<f4' 'fortran_order': False, 'shape': (7,)}",
                "expected '}'",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
                "too large",
            ),
        ] {
            let e = parse_header(bad).unwrap_err().to_string();
            assert!(e.contains(what), "{bad}: {e}");
        }
        // numpy's own spacing variants, double quotes, and a 0-d shape
        let p = parse_header(r#"{"descr":"<f4","fortran_order":False,"shape":()}"#).unwrap();
        assert!(p.shape.is_empty());
        let p =
            parse_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3L), }").unwrap();
        assert_eq!(p.shape, vec![2, 3]);
        let p = parse_header("{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }").unwrap();
        assert_eq!(p.shape, vec![7]);
        assert!(
            parse_header("{'descr': '<i4', 'fortran_order': False, 'shape': (7,), }")
                .unwrap_err()
                .to_string()
                .contains("signed integer")
        );
        assert!(
            parse_header("{'descr': '<f4', 'fortran_order': True, 'shape': (7,), }")
                .unwrap_err()
                .to_string()
                .contains("Fortran")
        );
    }

    #[test]
    fn truncated_and_garbage_are_errors() {
        let bytes = npy_bytes(
            ArrayDType::Elem(DType::F32),
            &[4],
            &encode(&[1f32, 2.0, 3.0, 4.0]),
        )
        .unwrap();
        for cut in 0..bytes.len() {
            assert!(parse_npy(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(parse_npy(&extra).is_err());
        assert!(parse_npy(b"not an npy file at all").is_err());
    }
}
