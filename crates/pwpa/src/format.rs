//! The versioned JSON table format (see `docs/FORMAT.md`).
//!
//! Loading validates everything [`Table::validate`] checks; saving writes to a
//! temporary file in the destination's directory and renames it, so a failed
//! write never leaves a half-written table.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::table::{soa_to_aos, Breakpoints, Layout, Table, Tail};

/// The `format` field of every table file.
pub const FORMAT_NAME: &str = "pwpa-table";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u64 = 1;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV1 {
    format: String,
    version: u64,
    degree: usize,
    breakpoints: BreakpointsV1,
    #[serde(serialize_with = "exact_f32::ser_vec")]
    anchors: Vec<f32>,
    layout: Layout,
    #[serde(serialize_with = "exact_f32::ser_vec")]
    coefficients: Vec<f32>,
    tails: TailsV1,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    meta: serde_json::Map<String, serde_json::Value>,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
enum BreakpointsV1 {
    Uniform {
        #[serde(serialize_with = "exact_f32::ser")]
        lo: f32,
        #[serde(serialize_with = "exact_f32::ser")]
        hi: f32,
        partitions: usize,
    },
    Arbitrary {
        #[serde(serialize_with = "exact_f32::ser_vec")]
        points: Vec<f32>,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TailsV1 {
    left: TailV1,
    right: TailV1,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
enum TailV1 {
    // Empty struct variants, not unit variants: they serialise the same way
    // (`{"kind": "clamp"}`), but serde's deny_unknown_fields has no effect on a unit
    // variant, and `{"kind": "clamp", "value": 0}` (meant as a constant) would load.
    Clamp {},
    Extend {},
    Linear {
        #[serde(serialize_with = "exact_f32::ser")]
        slope: f32,
        #[serde(serialize_with = "exact_f32::ser")]
        intercept: f32,
    },
    Constant {
        #[serde(with = "f32_or_inf")]
        value: f32,
    },
    Exp2 {
        negative: bool,
        #[serde(serialize_with = "exact_f32::ser")]
        anchor: f32,
        #[serde(serialize_with = "exact_f32::ser_vec")]
        coefficients: Vec<f32>,
    },
}

/// f32 values written so that they read back as the same bits. Reading takes a number's
/// nearest f64 and rounds that to f32 (FORMAT.md). serde_json writes an f32 as its
/// shortest decimal digits, which for one value and its negative (0x15ae43fd,
/// 7.038531e-26) are nearest to an f64 that lies exactly halfway between two f32 values:
/// it read back as the even neighbour, 0x15ae43fe. Such a value is written with the
/// digits of its f64 instead (17 significant digits, exact as f64, so exact as f32).
pub(crate) mod exact_f32 {
    use serde::ser::{SerializeSeq, Serializer};

    /// Whether serde_json's digits for the finite `v` read back as `v` (f64, then f32).
    pub fn reads_back(v: f32) -> bool {
        let mut buf = [0u8; 32];
        let mut w = &mut buf[..];
        if serde_json::to_writer(&mut w, &v).is_err() {
            return false;
        }
        let n = 32 - w.len();
        std::str::from_utf8(&buf[..n])
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .is_some_and(|x| (x as f32).to_bits() == v.to_bits())
    }

    pub fn ser<S: Serializer>(v: &f32, s: S) -> Result<S::Ok, S::Error> {
        if !v.is_finite() || reads_back(*v) {
            s.serialize_f32(*v)
        } else {
            s.serialize_f64(*v as f64)
        }
    }

    pub fn ser_vec<S: Serializer>(v: &[f32], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for x in v {
            seq.serialize_element(&super::ExactF32(*x))?;
        }
        seq.end()
    }
}

/// An f32 that serialises exactly (see `exact_f32`); also for other JSON writers of
/// f32 values (the seed format's JSON in `pwpa convert`).
#[derive(Clone, Copy, Debug)]
pub struct ExactF32(pub f32);

impl Serialize for ExactF32 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        exact_f32::ser(&self.0, s)
    }
}

/// A constant tail may be ±Inf (for example exp's right tail), which JSON cannot
/// write as a number: it is written as the string "inf" or "-inf".
mod f32_or_inf {
    use serde::{de::Error as _, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f32, s: S) -> Result<S::Ok, S::Error> {
        if *v == f32::INFINITY {
            s.serialize_str("inf")
        } else if *v == f32::NEG_INFINITY {
            s.serialize_str("-inf")
        } else {
            super::exact_f32::ser(v, s)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum V {
            N(f64),
            S(String),
        }
        match V::deserialize(d)? {
            // A finite number beyond f32 would silently become ±Inf.
            V::N(x) => crate::element::f32_from_f64(x).ok_or_else(|| {
                D::Error::custom(format!(
                    "constant tail value {x:e} overflows f32 (write \"inf\" or \"-inf\" for an infinite tail)"
                ))
            }),
            V::S(s) => match s.as_str() {
                "inf" | "+inf" => Ok(f32::INFINITY),
                "-inf" => Ok(f32::NEG_INFINITY),
                _ => Err(D::Error::custom(format!(
                    "constant tail value '{s}' is not a number (only \"inf\", \"+inf\" and \"-inf\" may be strings)"
                ))),
            },
        }
    }
}

impl From<&Tail> for TailV1 {
    fn from(t: &Tail) -> Self {
        match t {
            Tail::Clamp => TailV1::Clamp {},
            Tail::Extend => TailV1::Extend {},
            Tail::Linear { slope, intercept } => TailV1::Linear {
                slope: *slope,
                intercept: *intercept,
            },
            Tail::Constant { value } => TailV1::Constant { value: *value },
            Tail::Exp2 {
                negative,
                anchor,
                coeffs,
            } => TailV1::Exp2 {
                negative: *negative,
                anchor: *anchor,
                coefficients: coeffs.clone(),
            },
        }
    }
}

impl From<TailV1> for Tail {
    fn from(t: TailV1) -> Self {
        match t {
            TailV1::Clamp {} => Tail::Clamp,
            TailV1::Extend {} => Tail::Extend,
            TailV1::Linear { slope, intercept } => Tail::Linear { slope, intercept },
            TailV1::Constant { value } => Tail::Constant { value },
            TailV1::Exp2 {
                negative,
                anchor,
                coefficients,
            } => Tail::Exp2 {
                negative,
                anchor,
                coeffs: coefficients,
            },
        }
    }
}

/// Serialises a table to the JSON format with coefficients in `layout`.
pub fn to_json(table: &Table, layout: Layout) -> String {
    let b = match table.breakpoints() {
        Breakpoints::Uniform { lo, hi, partitions } => BreakpointsV1::Uniform {
            lo: *lo,
            hi: *hi,
            partitions: *partitions,
        },
        Breakpoints::Arbitrary(p) => BreakpointsV1::Arbitrary { points: p.clone() },
    };
    let file = FileV1 {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        degree: table.degree(),
        breakpoints: b,
        anchors: table.anchors().to_vec(),
        layout,
        coefficients: table.coeffs_in(layout),
        tails: TailsV1 {
            left: table.left_tail().into(),
            right: table.right_tail().into(),
        },
        meta: table.meta.clone(),
    };
    serde_json::to_string_pretty(&file).expect("table serialisation cannot fail")
}

/// Parses and validates a table, returning it and the file's coefficient layout.
pub fn from_json(text: &str) -> Result<(Table, Layout)> {
    // Check the header first so a wrong version gets its own message.
    // A UTF-8 byte order mark (some Windows editors write one) is not JSON: skip it.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value = parse_json_value(text).map_err(|e| Error::Format(json_error_message(text, &e)))?;
    let obj = value
        .as_object()
        .ok_or_else(|| Error::Format("the top level must be a JSON object".into()))?;
    match obj.get("format").and_then(|v| v.as_str()) {
        Some(FORMAT_NAME) => {}
        Some(other) => {
            return Err(Error::Format(format!(
                "field 'format' is '{other}', expected '{FORMAT_NAME}'"
            )))
        }
        None if obj.contains_key("partition_points") || obj.contains_key("coeffs") => {
            // (The CLI's info/eval/export said only "missing string field 'format'".)
            return Err(Error::Format(format!(
                "missing string field 'format' (expected '{FORMAT_NAME}'): this looks like a \
                 seed-format table (coeffs, partition_points); import it with `pwpa convert \
                 FILE --from seed --to aos -o table.json` (Python: pwpa.Table.from_seed, \
                 Rust: Table::from_seed)"
            )));
        }
        None => {
            return Err(Error::Format(format!(
                "missing string field 'format' (expected '{FORMAT_NAME}')"
            )))
        }
    }
    match obj.get("version").and_then(|v| v.as_u64()) {
        Some(FORMAT_VERSION) => {}
        Some(found) => {
            return Err(Error::UnsupportedVersion {
                found,
                supported: FORMAT_VERSION,
            })
        }
        None => {
            return Err(Error::Format(match obj.get("version") {
                Some(v) => format!(
                    "field 'version' must be a format version, a whole number (this build reads \
                     {FORMAT_VERSION}); got {v}"
                ),
                None => "missing integer field 'version'".into(),
            }))
        }
    }
    // The uniform range as written (f64), for a clearer message when its ends round to
    // one f32 value (1e-50 and 1e-46 are both 0 in f32).
    let written = |k: &str| {
        obj.get("breakpoints")
            .and_then(|b| b.get(k))
            .and_then(|v| v.as_f64())
    };
    let (lo_w, hi_w) = (written("lo"), written("hi"));
    let file: FileV1 = serde_json::from_value(value).map_err(|e| Error::Format(e.to_string()))?;
    let breakpoints = match file.breakpoints {
        BreakpointsV1::Uniform { lo, hi, partitions } => {
            if let (Some(a), Some(b)) = (lo_w, hi_w) {
                if a < b && lo >= hi {
                    return Err(Error::Format(format!(
                        "breakpoints: lo = {a:e} and hi = {b:e} are one value in f32 ({}), \
                         which a table's breakpoints are; use a range f32 can tell apart",
                        crate::metrics::Num(lo as f64)
                    )));
                }
            }
            Breakpoints::Uniform { lo, hi, partitions }
        }
        BreakpointsV1::Arbitrary { points } => Breakpoints::Arbitrary(points),
    };
    breakpoints.validate()?;
    let p = breakpoints.partitions();
    if file.degree > crate::table::MAX_DEGREE {
        return Err(Error::DegreeTooLarge {
            degree: file.degree,
            max: crate::table::MAX_DEGREE,
        });
    }
    if file.layout == Layout::Soa {
        // (Table::new checks the AoS order; a file's position is the one to name.)
        if let Some((index, &value)) = file
            .coefficients
            .iter()
            .enumerate()
            .find(|(_, v)| !v.is_finite())
        {
            return Err(Error::NonFinite {
                what: "coefficient",
                index,
                value,
            });
        }
    }
    let coeffs = match file.layout {
        Layout::Aos => file.coefficients,
        Layout::Soa => soa_to_aos(&file.coefficients, p, file.degree)?,
    };
    let mut table = Table::new(
        breakpoints,
        file.degree,
        file.anchors,
        coeffs,
        file.tails.left.into(),
        file.tails.right.into(),
    )?;
    table.meta = file.meta;
    Ok((table, file.layout))
}

/// Parses JSON text into a value, refusing an object that gives a key twice.
///
/// serde_json keeps the last of duplicate keys; a hand-edited or merged file with two
/// "coefficients" must not load as one of them (checked while parsing, in one pass).
/// Table files and seed files are both read through this.
pub fn parse_json_value(text: &str) -> serde_json::Result<serde_json::Value> {
    serde_json::from_str::<NoDuplicateKeys>(text).map(|v| v.0)
}

/// [`parse_json_value`]'s error as a message, which names a bare `NaN` or `Infinity` at
/// the place it points to (Python's `json.dump` writes them; JSON has no such values, and
/// the error alone said "expected value").
pub fn json_error_message(text: &str, e: &serde_json::Error) -> String {
    let at = text
        .lines()
        .nth(e.line().saturating_sub(1))
        .and_then(|l| l.get(e.column().saturating_sub(1)..))
        .unwrap_or("");
    match ["NaN", "Infinity", "-Infinity"]
        .into_iter()
        .find(|t| at.starts_with(t))
    {
        Some(t) => format!(
            "{e}: {t} is not a JSON value (Python's json.dump writes it unless allow_nan=False); \
             coefficients and breakpoints must be finite numbers"
        ),
        None => e.to_string(),
    }
}

/// A JSON value, parsed with objects that give a key twice rejected.
struct NoDuplicateKeys(serde_json::Value);

impl<'de> Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeysVisitor)
    }
}

struct NoDuplicateKeysVisitor;

impl<'de> serde::de::Visitor<'de> for NoDuplicateKeysVisitor {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys(v.into()))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<NoDuplicateKeys, E> {
        // (JSON numbers are finite: never null here.)
        Ok(NoDuplicateKeys(v.into()))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys(v.into()))
    }
    fn visit_unit<E>(self) -> std::result::Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys(serde_json::Value::Null))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<NoDuplicateKeys, A::Error> {
        let mut items = Vec::new();
        while let Some(NoDuplicateKeys(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(NoDuplicateKeys(serde_json::Value::Array(items)))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<NoDuplicateKeys, A::Error> {
        let mut obj = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if obj.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "the key '{key}' appears twice in one object"
                )));
            }
            let NoDuplicateKeys(v) = map.next_value()?;
            obj.insert(key, v);
        }
        Ok(NoDuplicateKeys(serde_json::Value::Object(obj)))
    }
}

/// The largest table file [`read_table_text`] reads: a table of the most partitions
/// ([`crate::table::MAX_PARTITIONS`]) at degree 15 is about 0.5 GB of JSON.
pub const MAX_TABLE_FILE_BYTES: u64 = 1 << 30;

/// A table file's text, for [`from_json`]. Refused before it is read whole: a file
/// whose first non-blank byte (after a UTF-8 byte-order mark) is not `{` (a table is a JSON object: not a table, as
/// /dev/zero or a binary file passed by mistake would be), and one larger than
/// [`MAX_TABLE_FILE_BYTES`].
pub fn read_table_text(path: &Path) -> Result<String> {
    use std::io::Read;
    let not_table = |why: &str| {
        Error::Format(format!(
            "{}: {why} (a pwpa table is a JSON object; see docs/FORMAT.md)",
            path.display()
        ))
    };
    let file = std::fs::File::open(path).map_err(|e| Error::io("cannot read", path, e))?;
    let mut reader = file.take(MAX_TABLE_FILE_BYTES + 1);
    let mut bytes = Vec::new();
    // The first block, then the rest once it looks like JSON.
    let mut block = [0u8; 4096];
    loop {
        let n = reader
            .read(&mut block)
            .map_err(|e| Error::io("cannot read", path, e))?;
        bytes.extend_from_slice(&block[..n]);
        let text = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes); // a UTF-8 BOM
        match text.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => break,
            Some(_) => return Err(not_table("not a pwpa table: it does not start with '{'")),
            None if n == 0 => break, // empty or blank: from_json says so
            None => {}
        }
    }
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("cannot read", path, e))?;
    if bytes.len() as u64 > MAX_TABLE_FILE_BYTES {
        return Err(not_table(&format!(
            "larger than {} GiB, more than any table",
            MAX_TABLE_FILE_BYTES >> 30
        )));
    }
    String::from_utf8(bytes).map_err(|_| not_table("not a text file"))
}

/// Loads a table file.
pub fn load(path: impl AsRef<Path>) -> Result<Table> {
    let path = path.as_ref();
    let text = read_table_text(path)?;
    from_json(&text).map(|(t, _)| t).map_err(|e| match e {
        Error::Format(m) => Error::Format(format!("{}: {m}", path.display())),
        other => other,
    })
}

/// Saves a table file atomically (temporary file + rename).
pub fn save(table: &Table, path: impl AsRef<Path>, layout: Layout) -> Result<()> {
    write_atomic(path, to_json(table, layout).as_bytes())
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a
/// rename, so readers never see a partial file and a failure leaves nothing behind.
///
/// A symbolic link is followed: the file it points to is replaced (atomically) and the
/// link stays. A path that is not a regular file (`/dev/stdout`, a FIFO, a device) is
/// written directly, as a stream, since it cannot be replaced; a directory is an error.
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
    let path = path.as_ref();
    write_atomic_with(path, |w| {
        w.write_all(bytes)
            .map_err(|e| Error::io("cannot write", path, e))
    })
}

/// [`write_atomic`] for output produced piece by piece: `write` gets a buffered writer
/// on the temporary file (or the stream) and may fail with its own error, which is
/// returned after the temporary file is removed. While the temporary file exists it is
/// listed for [`remove_pending_temp_files`] (a Ctrl-C handler's clean-up).
pub fn write_atomic_with<E: From<Error>>(
    path: impl AsRef<Path>,
    write: impl FnOnce(&mut dyn Write) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let given = path.as_ref();
    let link = std::fs::symlink_metadata(given).is_ok_and(|m| m.file_type().is_symlink());
    match std::fs::metadata(given) {
        Ok(m) if m.is_dir() => {
            return Err(Error::InvalidArgument(format!(
                "cannot write {}: it is a directory",
                given.display()
            ))
            .into())
        }
        // A stream (/dev/stdout → /proc/self/fd/1, a FIFO, a device).
        Ok(m) if !m.is_file() => return write_stream(given, write),
        Err(e) if link => {
            return Err(Error::io("cannot write (a symbolic link to nothing)", given, e).into())
        }
        _ => {}
    }
    let resolved = if link {
        std::fs::canonicalize(given).map_err(|e| Error::io("cannot write", given, e))?
    } else {
        given.to_path_buf()
    };
    let path = resolved.as_path();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| Error::InvalidArgument(format!("not a file path: {}", path.display())))?;
    let tmp = TempFile::new(&dir, &name.to_string_lossy(), "");
    // The temporary file beside the output is the first thing created: say so, since
    // its error names neither (/proc exists, but nothing can be created in it: ENOENT).
    let file = std::fs::File::create_new(tmp.path())
        .map_err(|e| Error::io("cannot create a temporary file beside", path, e))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    write(&mut w)?;
    let file = w
        .into_inner()
        .map_err(|e| Error::io("cannot write", path, e.into_error()))?;
    file.sync_all()
        .map_err(|e| Error::io("cannot write", path, e))?;
    drop(file);
    tmp.persist(path)
        .map_err(|e| Error::io("cannot write", path, e))?;
    Ok(())
}

/// Temporary files being written now, for [`remove_pending_temp_files`].
static PENDING: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Removes the temporary files that writes in progress have created (they are listed
/// from their creation until their rename or removal). For an interrupt handler, just
/// before the process exits: an interrupted write then leaves no hidden file behind.
pub fn remove_pending_temp_files() {
    let pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    for p in pending.iter() {
        let _ = std::fs::remove_file(p);
    }
}

/// A temporary file name (see [`temp_path`]), listed in [`PENDING`] while it lives; the
/// file (if any) is removed on drop unless [`TempFile::persist`] renamed it.
pub(crate) struct TempFile {
    path: std::path::PathBuf,
    kept: bool,
}

impl TempFile {
    pub(crate) fn new(dir: &Path, name: &str, suffix: &str) -> TempFile {
        let path = temp_path(dir, name, suffix);
        PENDING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(path.clone());
        TempFile { path, kept: false }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the file to `to` (then it is no longer temporary). A file it replaces
    /// passes on its permissions (a table kept at mode 600 stays 600; the new file had
    /// the umask's 644).
    pub(crate) fn persist(mut self, to: &Path) -> std::io::Result<()> {
        if let Ok(m) = std::fs::metadata(to) {
            std::fs::set_permissions(&self.path, m.permissions())?;
        }
        std::fs::rename(&self.path, to)?;
        self.kept = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
        let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = pending.iter().position(|p| *p == self.path) {
            pending.swap_remove(k);
        }
    }
}

/// A temporary file name in `dir` for `name`, unique across the threads and processes
/// writing there (`.NAME.tmp-PID-N`), so that concurrent writers of one path never
/// share a temporary file; created with `create_new`, it is never truncated under another.
fn temp_path(dir: &Path, name: &str, suffix: &str) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    dir.join(format!(".{name}.tmp-{}-{n}{suffix}", std::process::id()))
}

/// Writes to an existing non-regular file (a FIFO, a terminal, a pipe behind
/// `/dev/stdout`) without truncating or replacing it.
fn write_stream<E: From<Error>>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io("cannot write", path, e))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    write(&mut w)?;
    w.flush().map_err(|e| Error::io("cannot write", path, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_writing_one_path_never_publish_a_partial_file() {
        // The temporary name used to be per process: threads of one process shared it,
        // and a reader saw truncated files (and writers failed on its rename).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        let bodies: Vec<Vec<u8>> = (0..4u8).map(|k| vec![b'a' + k; 200_000]).collect();
        write_atomic(&path, &bodies[0]).unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let mut reads = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let got = std::fs::read(&path).unwrap();
                    assert!(
                        bodies.contains(&got),
                        "a partial file of {} bytes",
                        got.len()
                    );
                    reads += 1;
                }
                reads
            });
            let writers: Vec<_> = bodies
                .iter()
                .map(|b| s.spawn(|| (0..50).map(|_| write_atomic(&path, b)).collect::<Vec<_>>()))
                .collect();
            let results: Vec<_> = writers.into_iter().map(|w| w.join().unwrap()).collect();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            assert!(reader.join().unwrap() > 0);
            for r in results.into_iter().flatten() {
                r.unwrap();
            }
        });
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "temporary files left behind");
    }

    fn sample() -> Table {
        let b = Breakpoints::arbitrary(vec![-3.0, -1.0, 0.25, 4.0]).unwrap();
        let coeffs: Vec<f32> = (0..9).map(|i| (i as f32 * 0.7).cos() / 3.0).collect();
        let mut t = Table::new(
            b.clone(),
            2,
            Table::midpoint_anchors(&b),
            coeffs,
            Tail::Exp2 {
                negative: true,
                anchor: -3.0,
                coeffs: vec![0.1, 1.5, -2.25],
            },
            Tail::Linear {
                slope: 1.0,
                intercept: -0.125,
            },
        )
        .unwrap();
        t.meta.insert("function".into(), "test".into());
        t
    }

    #[test]
    fn json_round_trip_is_exact_in_both_layouts() {
        let t = sample();
        for layout in [Layout::Aos, Layout::Soa] {
            let (back, l) = from_json(&to_json(&t, layout)).unwrap();
            assert_eq!(l, layout);
            assert_eq!(back, t);
        }
    }

    #[test]
    fn every_f32_field_reads_back_bit_exact() {
        // serde_json's shortest digits for 0x15ae43fd (7.038531e-26) are nearest to an f64
        // halfway between two f32 values: the loader's f64-then-f32 rule read them back as
        // 0x15ae43fe (a CLI audit found it; the only such f32 and its negative).
        let v = f32::from_bits(0x15ae_43fd);
        assert!(!exact_f32::reads_back(v) && !exact_f32::reads_back(-v));
        let text = serde_json::to_string(&v).unwrap();
        assert_ne!(
            (text.parse::<f64>().unwrap() as f32).to_bits(),
            v.to_bits(),
            "{text}"
        );
        // In every kind of f32 field.
        let pts = vec![-1.0, -v, 0.0, v, 1.0];
        let arb = Breakpoints::arbitrary(pts).unwrap();
        let coeffs = vec![v, -v, 1.0, v, -v, 0.5, v, 2.0];
        let exp2 = Tail::Exp2 {
            negative: false,
            anchor: -v,
            coeffs: vec![v, -v, 1.0],
        };
        let t = Table::new(
            arb,
            1,
            vec![-v, v, -v, v],
            coeffs.clone(),
            exp2,
            Tail::Constant { value: v },
        )
        .unwrap();
        let lin = Tail::Linear {
            slope: v,
            intercept: -v,
        };
        let uni = Table::new(
            Breakpoints::uniform(-v, v, 4).unwrap(),
            1,
            vec![v; 4],
            coeffs,
            lin.clone(),
            lin,
        )
        .unwrap();
        for t in [t, uni] {
            for layout in [Layout::Aos, Layout::Soa] {
                let back = from_json(&to_json(&t, layout)).unwrap().0;
                assert_eq!(format!("{back:?}"), format!("{t:?}"));
                let bits = |t: &Table| {
                    t.coeffs()
                        .iter()
                        .chain(t.anchors())
                        .map(|x| x.to_bits())
                        .collect::<Vec<_>>()
                };
                assert_eq!(bits(&back), bits(&t));
            }
        }
        // Random finite bit patterns (and the value above) through the writer.
        let mut z = 0x1234_5678_9abc_def0u64;
        for i in 0..200_000u32 {
            z = z
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let x = if i == 0 {
                v
            } else {
                f32::from_bits((z >> 32) as u32)
            };
            if !x.is_finite() {
                continue;
            }
            let text = serde_json::to_string(&ExactF32(x)).unwrap();
            let back = text.parse::<f64>().unwrap() as f32;
            assert_eq!(back.to_bits(), x.to_bits(), "{x:e} written as {text}");
        }
    }

    #[test]
    fn infinite_constant_tails_round_trip() {
        for v in [f32::INFINITY, f32::NEG_INFINITY] {
            let t = sample()
                .with_tails(Tail::Constant { value: v }, Tail::Constant { value: -0.0 })
                .unwrap();
            let text = to_json(&t, Layout::Aos);
            let back = from_json(&text).unwrap().0;
            assert_eq!(back, t);
            assert_eq!(back.right_tail(), &Tail::Constant { value: -0.0 });
            if let Tail::Constant { value } = back.right_tail() {
                assert!(value.is_sign_negative());
            }
        }
        let good = to_json(&sample(), Layout::Aos);
        let bad = good.replace(
            "\"kind\": \"linear\",\n      \"slope\": 1.0,\n      \"intercept\": -0.125",
            "\"kind\": \"constant\",\n      \"value\": \"nan\"",
        );
        assert_ne!(bad, good);
        let e = from_json(&bad).unwrap_err().to_string();
        assert!(e.contains("malformed"), "{e}");
        // A finite number beyond f32 is refused (it became +Inf silently); the largest
        // f32 and the string "inf" load.
        let with = |v: &str| {
            good.replace(
                "\"kind\": \"linear\",\n      \"slope\": 1.0,\n      \"intercept\": -0.125",
                &format!("\"kind\": \"constant\",\n      \"value\": {v}"),
            )
        };
        let e = from_json(&with("1e39")).unwrap_err().to_string();
        assert!(e.contains("1e39 overflows f32"), "{e}");
        let e = from_json(&with("-1e300")).unwrap_err().to_string();
        assert!(e.contains("overflows f32"), "{e}");
        for (v, want) in [
            ("3.4028234663852886e38", f32::MAX),
            ("\"inf\"", f32::INFINITY),
        ] {
            let t = from_json(&with(v)).unwrap().0;
            assert_eq!(t.right_tail(), &Tail::Constant { value: want }, "{v}");
        }
    }

    /// A non-finite coefficient of an SoA file is named by its position in the file (it
    /// was named by its AoS position, after the conversion; a user audit, 2026-11-29).
    #[test]
    fn soa_non_finite_coefficient_named_by_file_position() {
        let doc = |layout: &str| {
            format!(
                r#"{{"format": "pwpa-table", "version": 1, "degree": 1,
                "breakpoints": {{"kind": "uniform", "lo": 0, "hi": 1, "partitions": 2}},
                "anchors": [0, 0.5], "layout": "{layout}",
                "coefficients": [1.0, 1e39, 2.0, 11.0],
                "tails": {{"left": {{"kind": "clamp"}}, "right": {{"kind": "clamp"}}}}}}"#
            )
        };
        for layout in ["aos", "soa"] {
            let e = from_json(&doc(layout)).unwrap_err().to_string();
            assert!(e.contains("coefficient 1 is not finite"), "{layout}: {e}");
        }
    }

    /// `clamp` and `extend` tails are written as `{"kind": …}` alone, and an extra
    /// field in them is refused like anywhere else outside `meta` (they were unit
    /// variants, on which serde ignores deny_unknown_fields).
    #[test]
    fn clamp_and_extend_tails_refuse_unknown_fields() {
        let t = sample().with_tails(Tail::Clamp, Tail::Extend).unwrap();
        let good = to_json(&t, Layout::Aos);
        // The text the unit variants produced (byte-identical serialisation).
        let tails = "  \"tails\": {\n    \"left\": {\n      \"kind\": \"clamp\"\n    },\n    \
                     \"right\": {\n      \"kind\": \"extend\"\n    }\n  },\n";
        assert!(good.contains(tails), "{good}");
        assert_eq!(from_json(&good).unwrap().0, t);
        for (kind, extra) in [
            ("clamp", "\"value\": 0"),
            ("clamp", "\"foo\": 1"),
            ("extend", "\"slope\": 1"),
        ] {
            let bad = good.replace(
                &format!("\"kind\": \"{kind}\"\n"),
                &format!("\"kind\": \"{kind}\", {extra}\n"),
            );
            assert_ne!(bad, good);
            let e = from_json(&bad).unwrap_err().to_string();
            assert!(e.contains("unknown field"), "{kind} {extra}: {e}");
        }
    }

    #[test]
    fn bad_files_get_clear_errors() {
        let good = to_json(&sample(), Layout::Aos);
        let e = from_json("{").unwrap_err().to_string();
        assert!(e.contains("malformed"), "{e}");
        let e = from_json(&good.replace("\"version\": 1", "\"version\": 7"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("version 7"), "{e}");
        let e = from_json(&good.replace("pwpa-table", "other"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'other'"), "{e}");
        let e = from_json(&good.replace("-1.0,", "-4.0,"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("strictly increasing"), "{e}");
        let e = from_json(&good.replace("\"degree\": 2", "\"degree\": 3"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected 12 coefficients"), "{e}");
        // A uniform range whose ends are one f32 value: say so (it read "lo = 0 must be
        // less than hi = 0").
        let uni = Table::new(
            Breakpoints::uniform(0.0, 1.0, 1).unwrap(),
            0,
            vec![0.0],
            vec![1.0],
            Tail::Clamp,
            Tail::Clamp,
        )
        .unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&to_json(&uni, Layout::Aos)).unwrap();
        v["breakpoints"]["lo"] = serde_json::json!(1e-50);
        v["breakpoints"]["hi"] = serde_json::json!(1e-46);
        let e = from_json(&v.to_string()).unwrap_err().to_string();
        assert!(
            e.contains("lo = 1e-50 and hi = 1e-46 are one value in f32"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn links_streams_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        let link = dir.path().join("link.json");
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        save(&sample(), &link, Layout::Aos).unwrap();
        // The link stays a link; the file it names holds the table.
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(load(&real).unwrap(), sample());
        // A character device is written as a stream, not replaced.
        write_atomic("/dev/null", b"x").unwrap();
        assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
        // A FIFO: the bytes arrive at its reader, and it stays a FIFO.
        let fifo = dir.path().join("f.json");
        let st = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(st.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(&fifo).unwrap())
        };
        write_atomic(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(!std::fs::symlink_metadata(&fifo).unwrap().is_file());
        // A dangling link and a directory are errors that say so.
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(dir.path().join("nowhere/x"), &dangling).unwrap();
        let e = write_atomic(&dangling, b"x").unwrap_err().to_string();
        assert!(e.contains("symbolic link to nothing"), "{e}");
        let e = write_atomic(dir.path(), b"x").unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        // The OS error appears once in the message.
        let e = write_atomic(dir.path().join("no/such/t.json"), b"x").unwrap_err();
        assert!(std::error::Error::source(&e).is_none());
        assert_eq!(e.to_string().matches("os error").count(), 1, "{e}");
    }

    #[test]
    fn a_binary_file_is_a_format_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        std::fs::write(&p, [0x7b, 0xff, 0xfe, 0x00, 0x80]).unwrap();
        let e = load(&p).unwrap_err();
        assert!(matches!(e, Error::Format(_)), "{e:?}");
        assert!(e.to_string().contains("not a text file"), "{e}");
    }

    #[test]
    fn atomic_save_leaves_no_partial_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        save(&sample(), &p, Layout::Soa).unwrap();
        assert_eq!(load(&p).unwrap(), sample());
        let bad = dir.path().join("missing-dir").join("t.json");
        assert!(save(&sample(), &bad, Layout::Aos).is_err());
        assert!(!bad.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// A bare NaN or Infinity (Python's json.dump writes them) is named in the error.
    #[test]
    fn nan_and_infinity_literals_are_named() {
        let good = to_json(&sample(), Layout::Aos);
        let c = good.find("\"coefficients\"").unwrap();
        let v = c + good[c..]
            .find(|ch: char| ch.is_ascii_digit() || ch == '-')
            .unwrap();
        let end = v + good[v..].find([',', '\n', ']']).unwrap();
        for lit in ["NaN", "Infinity", "-Infinity"] {
            let text = format!("{}{lit}{}", &good[..v], &good[end..]);
            let e = from_json(&text).unwrap_err().to_string();
            assert!(e.contains("is not a JSON value"), "{lit}: {e}");
            assert!(e.contains(lit.trim_start_matches('-')), "{lit}: {e}");
        }
        // Other syntax errors are as serde_json says.
        let e = from_json("{\"format\": }").unwrap_err().to_string();
        assert!(
            e.contains("expected value") && !e.contains("not a JSON value"),
            "{e}"
        );
    }

    /// Writing over a file keeps its permissions (the rename left the umask's 644).
    #[cfg(unix)]
    #[test]
    fn an_overwritten_file_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        save(&sample(), &p, Layout::Aos).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        save(&sample(), &p, Layout::Soa).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(load(&p).unwrap(), sample());
    }
}
