//! Matrix Market reader and writer.
//!
//! Reads the *coordinate* format with fields `real`, `double`, `integer` and `pattern` (values 1.0)
//! and symmetries `general`, `symmetric`, `skew-symmetric` and `hermitian` (expanded to both
//! triangles; the diagonal is not doubled). `complex` files and the dense `array` format are refused
//! with [`DatasetError::Unsupported`]. The file may be plain or gzip-compressed (detected from its
//! first bytes, not its name). Reading streams through bounded buffers: the body is cut into
//! blocks of whole lines that are parsed in parallel while the next blocks are read (and
//! decompressed); entries go into a `sprs` triplet matrix that is converted to CSR in O(nnz)
//! (columns sorted, duplicates summed in file order, explicit zeros kept).
//!
//! Every malformed input is an error naming the file and the 1-based line, never a panic.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};

use rayon::prelude::*;
use std::path::{Path, PathBuf};

use sprs::TriMatI;

use crate::{build, Csr, DatasetError, Scalar, MAX_INDEX};

/// The value field of a Matrix Market file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    Real,
    Integer,
    Pattern,
}

/// The symmetry of a Matrix Market file (how many triangles it stores).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Symmetry {
    General,
    Symmetric,
    SkewSymmetric,
    Hermitian,
}

/// What the banner and size line of a file said.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Header {
    pub field: Field,
    pub symmetry: Symmetry,
    pub rows: usize,
    pub cols: usize,
    /// Entries stored in the file (one triangle for symmetric files).
    pub entries: usize,
}

/// A matrix read from a file, with what was learnt while reading it.
#[derive(Debug, Clone)]
pub struct MtxMatrix<T> {
    pub header: Header,
    pub matrix: Csr<T>,
    /// Bytes of Matrix Market text read (after decompression).
    pub text_bytes: u64,
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const READ_BUFFER: usize = 1 << 18;

/// Read a Matrix Market file (`.mtx` or gzip-compressed `.mtx.gz`) into CSR.
pub fn read<T: Scalar>(path: impl AsRef<Path>) -> Result<MtxMatrix<T>, DatasetError> {
    let path = path.as_ref();
    let open_err = |source| DatasetError::Open {
        path: path.to_path_buf(),
        source,
    };
    let mut file = BufReader::with_capacity(READ_BUFFER, File::open(path).map_err(open_err)?);
    let gz = file.fill_buf().map_err(open_err)?.starts_with(&GZIP_MAGIC);
    if gz {
        let dec = flate2::bufread::MultiGzDecoder::new(file);
        read_from(BufReader::with_capacity(READ_BUFFER, dec), path)
    } else {
        read_from(file, path)
    }
}

/// Read Matrix Market text from any buffered reader; `path` names it in errors.
pub fn read_from<T: Scalar, R: BufRead + Send>(
    reader: R,
    path: &Path,
) -> Result<MtxMatrix<T>, DatasetError> {
    let mut lines = Lines {
        reader,
        buf: Vec::with_capacity(256),
        line: 0,
        bytes: 0,
        path,
    };
    let (field, symmetry) = read_banner(&mut lines)?;
    let (rows, cols, entries, size_line) = read_size_line(&mut lines)?;
    let header = Header {
        field,
        symmetry,
        rows,
        cols,
        entries,
    };
    if symmetry != Symmetry::General && rows != cols {
        return Err(lines.error_at(
            size_line,
            format!("a {symmetry:?} matrix must be square, but the size line says {rows} x {cols}"),
        ));
    }
    // Memory follows the declared dimensions (row pointers, x and y), not the entries: a small
    // file declaring billions of rows would make a process of gigabytes. Past 2^24 rows or
    // columns, at most MAX_DIM_PER_ENTRY of them per entry.
    let most = (entries as u128 * MAX_DIM_PER_ENTRY as u128).max(1 << 24);
    if rows.max(cols) as u128 > most {
        return Err(lines.error_at(
            size_line,
            format!(
                "the size line declares {rows} x {cols} with {entries} entries: more than \
                 {MAX_DIM_PER_ENTRY} rows or columns per entry past 2^24 (its row pointers alone \
                 would take {:.1} GB); a damaged header?",
                (rows as f64 + 1.0) * 4.0 / 1e9
            ),
        ));
    }

    let body = Body {
        path,
        field,
        symmetry,
        rows,
        cols,
        entries,
        size_line,
    };
    let next_line = lines.line + 1;
    let (tri, text_bytes) = body.read::<T, R>(lines.reader, next_line, lines.bytes)?;
    let matrix: Csr<T> = build::csr_from_triplets(
        &path.display().to_string(),
        (rows, cols),
        tri.row_inds(),
        tri.col_inds(),
        tri.data(),
    )?;
    Ok(MtxMatrix {
        header,
        matrix,
        text_bytes,
    })
}

/// Past 2^24 rows or columns, the most of them a file may declare per entry (see `read_from`).
pub const MAX_DIM_PER_ENTRY: u64 = 64;

/// Text per block of the body; blocks end at line ends and are parsed in parallel.
const BLOCK_BYTES: u64 = 1 << 20;

/// What the entry lines of one file must look like.
struct Body<'a> {
    path: &'a Path,
    field: Field,
    symmetry: Symmetry,
    rows: usize,
    cols: usize,
    entries: usize,
    size_line: u64,
}

/// Entries parsed from one block (mirrored ones included).
struct Triplets<T> {
    rows: Vec<i32>,
    cols: Vec<i32>,
    vals: Vec<T>,
    /// Entry lines read (before mirroring).
    entries: usize,
}

/// A block of whole lines and the number of its first line.
type Block = (Vec<u8>, u64);

impl Body<'_> {
    /// Read the entry lines after the size line. A batch of blocks is parsed in parallel while
    /// the next batch is read (and decompressed); the blocks are then merged in file order, so the
    /// first error in the file is the one reported, exactly as a sequential reader would.
    fn read<T: Scalar, R: BufRead + Send>(
        &self,
        mut reader: R,
        first_line: u64,
        header_bytes: u64,
    ) -> Result<(TriMatI<T, i32>, u64), DatasetError> {
        let batch = rayon::current_num_threads().max(2);
        let mut next_line = first_line;
        let mut bytes = header_bytes;
        let expand = self.symmetry != Symmetry::General;
        // Reserve what the size line promises, bounded so that a lying header cannot make us
        // allocate gigabytes before the first entry is read.
        let cap = if expand {
            2 * self.entries
        } else {
            self.entries
        }
        .min(1 << 24);
        let mut all = Triplets::<T>::with_capacity(cap);
        let mut pending = read_batch(&mut reader, self.path, batch, &mut next_line, &mut bytes);
        loop {
            let blocks = pending?;
            if blocks.is_empty() {
                break;
            }
            let (next, parsed) = rayon::join(
                || read_batch(&mut reader, self.path, batch, &mut next_line, &mut bytes),
                || {
                    blocks
                        .par_iter()
                        .map(|(text, line)| self.parse_block::<T>(text, *line, None))
                        .collect::<Vec<_>>()
                },
            );
            for ((text, line), p) in blocks.iter().zip(parsed) {
                let remaining = self.entries - all.entries;
                let p = match p {
                    Ok(p) if p.entries <= remaining => p,
                    // Parse again with the remaining budget: finds the first error in order.
                    _ => self.parse_block::<T>(text, *line, Some(remaining))?,
                };
                if all.rows.len() + p.rows.len() > MAX_INDEX {
                    return Err(DatasetError::TooLarge {
                        name: self.path.display().to_string(),
                        what: "nnz (both triangles)",
                        value: if expand { 2 } else { 1 } * self.entries as u128,
                        max: MAX_INDEX,
                    });
                }
                all.append(p);
            }
            pending = next;
        }
        if all.entries < self.entries {
            return Err(DatasetError::Parse {
                path: self.path.to_path_buf(),
                line: (next_line - 1).max(1),
                msg: format!(
                    "file ends after {} of the {} entries declared on line {}",
                    all.entries, self.entries, self.size_line
                ),
            });
        }
        let tri = TriMatI::from_triplets((self.rows, self.cols), all.rows, all.cols, all.vals);
        Ok((tri, bytes))
    }

    /// Parse the lines of `text`, the first of which is line `first_line` of the file. With a
    /// budget, an entry beyond it is the "more entries than declared" error.
    fn parse_block<T: Scalar>(
        &self,
        text: &[u8],
        first_line: u64,
        budget: Option<usize>,
    ) -> Result<Triplets<T>, DatasetError> {
        let expand = self.symmetry != Symmetry::General;
        let mut out = Triplets::with_capacity(text.len() / 24 * (1 + expand as usize));
        let mut start = 0;
        let mut line = first_line;
        while start < text.len() {
            let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |e| start + e);
            let raw = &text[start..end];
            start = end + 1;
            line += 1;
            let at = At {
                path: self.path,
                line: line - 1,
                text: raw.strip_suffix(b"\r").unwrap_or(raw),
            };
            match at.text.iter().find(|b| !b.is_ascii_whitespace()) {
                None | Some(b'%') => continue,
                Some(_) => {}
            }
            if budget == Some(out.entries) {
                return Err(at.error(format!(
                    "more entries than the {} declared on line {}",
                    self.entries, self.size_line
                )));
            }
            let (i, j, v) = parse_entry::<T>(&at, self.field, self.rows, self.cols)?;
            out.push(i, j, v);
            if expand && i != j {
                let w = if self.symmetry == Symmetry::SkewSymmetric {
                    -v
                } else {
                    v
                };
                out.push(j, i, w);
            }
            out.entries += 1;
        }
        Ok(out)
    }
}

impl<T> Triplets<T> {
    fn with_capacity(n: usize) -> Self {
        Triplets {
            rows: Vec::with_capacity(n),
            cols: Vec::with_capacity(n),
            vals: Vec::with_capacity(n),
            entries: 0,
        }
    }

    #[inline]
    fn push(&mut self, i: usize, j: usize, v: T) {
        self.rows.push(i as i32);
        self.cols.push(j as i32);
        self.vals.push(v);
    }

    fn append(&mut self, mut o: Triplets<T>) {
        self.rows.append(&mut o.rows);
        self.cols.append(&mut o.cols);
        self.vals.append(&mut o.vals);
        self.entries += o.entries;
    }
}

/// The longest line the reader takes (bytes, line break included): a Matrix Market line is a
/// banner, a comment or one entry, far shorter. A file with a longer line (a stream of NULs, a
/// binary file) is an error at that line instead of a buffer that grows with the file.
pub const MAX_LINE_BYTES: u64 = 1 << 20;

/// `read_until(b'\n')` that stops after [`MAX_LINE_BYTES`]: Ok(true) when `buf` got a whole line
/// (or the end of the input), Ok(false) when the line is longer than the cap.
fn read_line_capped<R: BufRead>(reader: &mut R, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let start = buf.len();
    let n = reader.take(MAX_LINE_BYTES).read_until(b'\n', buf)?;
    let whole = buf.last() == Some(&b'\n') || (n as u64) < MAX_LINE_BYTES;
    if !whole {
        // Exactly at the cap: a whole line only if the input ends here.
        return Ok(reader.fill_buf()?.is_empty() && buf.len() > start);
    }
    Ok(true)
}

fn too_long(path: &Path, line: u64) -> DatasetError {
    DatasetError::Parse {
        path: path.to_path_buf(),
        line,
        msg: format!(
            "line longer than {} bytes (no line break): not Matrix Market text (binary data, \
             or a file of NULs?)",
            MAX_LINE_BYTES
        ),
    }
}

/// Up to `count` blocks of whole lines. `next_line` and `bytes` advance past what was read.
fn read_batch<R: BufRead>(
    reader: &mut R,
    path: &Path,
    count: usize,
    next_line: &mut u64,
    bytes: &mut u64,
) -> Result<Vec<Block>, DatasetError> {
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let mut text = Vec::with_capacity(BLOCK_BYTES as usize + 256);
        let mut r = (&mut *reader).take(BLOCK_BYTES).read_to_end(&mut text);
        let mut whole = true;
        if r.is_ok() && !text.is_empty() && text.last() != Some(&b'\n') {
            r = read_line_capped(reader, &mut text).map(|w| {
                whole = w;
                0
            });
        }
        let newlines = memchr::memchr_iter(b'\n', &text).count() as u64;
        if !whole {
            return Err(too_long(path, *next_line + newlines));
        }
        if let Err(source) = r {
            return Err(read_error(path, *next_line + newlines, source));
        }
        if text.is_empty() {
            break;
        }
        let lines = newlines + (text.last() != Some(&b'\n')) as u64;
        *bytes += text.len() as u64;
        out.push((text, *next_line));
        *next_line += lines;
    }
    Ok(out)
}

/// Write a matrix as a general real coordinate Matrix Market file; gzip-compressed when the path
/// ends in `.gz`. Written to a temporary name and renamed, so a failure leaves nothing half-written.
pub fn write<T: Scalar>(path: impl AsRef<Path>, matrix: &Csr<T>) -> Result<(), DatasetError> {
    let path = path.as_ref();
    let werr = |source| DatasetError::Write {
        path: path.to_path_buf(),
        source,
    };
    let tmp = tmp_name(path);
    let result = (|| -> std::io::Result<()> {
        let file = BufWriter::with_capacity(READ_BUFFER, File::create(&tmp)?);
        let gz = path.extension().is_some_and(|e| e == "gz");
        let mut out: Box<dyn Write> = if gz {
            Box::new(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::fast(),
            ))
        } else {
            Box::new(file)
        };
        // sprs writes the banner, the size line and 1-based entries in general symmetry.
        let view = matrix.view();
        sprs::io::write_matrix_market_to_bufwrite(
            &mut out,
            view.map(|v| Scalar::as_f64(*v)).view(),
        )
        .map_err(|e| std::io::Error::other(e.to_string()))?;
        out.flush()?;
        drop(out);
        Ok(())
    })();
    match result {
        Ok(()) => std::fs::rename(&tmp, path).map_err(werr),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(werr(e))
        }
    }
}

fn tmp_name(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".partial-{}", std::process::id()));
    path.with_file_name(name)
}

/// Line-at-a-time reader over one reused buffer that counts lines and bytes.
struct Lines<'p, R> {
    reader: R,
    buf: Vec<u8>,
    /// 1-based number of the line in `buf`.
    line: u64,
    bytes: u64,
    path: &'p Path,
}

impl<R: BufRead> Lines<'_, R> {
    /// Read the next line into `buf` (without its line ending). False at end of file.
    fn next_line(&mut self) -> Result<bool, DatasetError> {
        self.buf.clear();
        match read_line_capped(&mut self.reader, &mut self.buf) {
            Ok(false) => Err(too_long(self.path, self.line + 1)),
            Ok(true) if self.buf.is_empty() => Ok(false),
            Ok(true) => {
                let n = self.buf.len();
                self.line += 1;
                self.bytes += n as u64;
                while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
                    self.buf.pop();
                }
                Ok(true)
            }
            Err(source) => Err(read_error(self.path, self.line + 1, source)),
        }
    }

    /// Next line that is neither blank nor a `%` comment. False at end of file.
    fn next_data_line(&mut self) -> Result<bool, DatasetError> {
        while self.next_line()? {
            match self.buf.iter().find(|b| !b.is_ascii_whitespace()) {
                None | Some(b'%') => continue,
                Some(_) => return Ok(true),
            }
        }
        Ok(false)
    }

    fn tokens(&self) -> impl Iterator<Item = &[u8]> {
        self.buf
            .split(|b| b.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
    }

    fn error(&self, msg: String) -> DatasetError {
        self.error_at(self.line.max(1), msg)
    }

    fn error_at(&self, line: u64, msg: String) -> DatasetError {
        DatasetError::Parse {
            path: self.path.to_path_buf(),
            line,
            msg,
        }
    }

    fn unsupported(&self, what: String, why: &str) -> DatasetError {
        DatasetError::Unsupported {
            path: self.path.to_path_buf(),
            line: self.line.max(1),
            what,
            why: why.to_string(),
        }
    }
}

/// A read error at `line`. A gzip decoder that finished one stream and finds bytes that are not
/// another gzip member after it reports "invalid gzip header": past the first line that is data
/// appended to a complete file, and the message says so.
fn read_error(path: &Path, line: u64, source: std::io::Error) -> DatasetError {
    let source = if line > 1 && source.to_string().contains("invalid gzip header") {
        std::io::Error::new(
            source.kind(),
            "bytes after the end of the gzip stream are not another gzip member (junk appended \
             to a complete file?)",
        )
    } else {
        source
    };
    DatasetError::Read {
        path: path.to_path_buf(),
        line,
        source,
    }
}

fn read_banner<R: BufRead>(lines: &mut Lines<R>) -> Result<(Field, Symmetry), DatasetError> {
    if !lines.next_line()? {
        return Err(lines.error("empty file: expected a `%%MatrixMarket` banner".into()));
    }
    let words: Vec<String> = lines
        .tokens()
        .map(|t| String::from_utf8_lossy(t).to_ascii_lowercase())
        .collect();
    if lines.buf.starts_with(b"\xef\xbb\xbf") {
        return Err(lines.error(
            "the file starts with a UTF-8 byte-order mark (bytes EF BB BF) before `%%MatrixMarket`: \
             remove it (Matrix Market files are plain ASCII)"
                .into(),
        ));
    }
    // Line breaks and a trailing CR are stripped: a CR left is inside the line.
    if lines.buf.contains(&b'\r') {
        return Err(lines.error(
            "the banner line holds carriage returns (CR, `\\r`) inside it: lines end with CR alone \
             (old Mac line endings); convert them to LF (e.g. `tr '\\r' '\\n'`)"
                .into(),
        ));
    }
    if words.first().map(String::as_str) != Some("%%matrixmarket") {
        let shown = String::from_utf8_lossy(&lines.buf[..lines.buf.len().min(60)]).into_owned();
        return Err(lines.error(format!(
            "bad banner `{shown}`: a Matrix Market file starts with `%%MatrixMarket matrix coordinate <field> <symmetry>`"
        )));
    }
    if words.len() != 5 {
        return Err(lines.error(format!(
            "bad banner: expected 4 words after %%MatrixMarket (object format field symmetry), found {}",
            words.len() - 1
        )));
    }
    if words[1] != "matrix" {
        return Err(lines.unsupported(
            format!("object `{}`", words[1]),
            "augur reads only `matrix` objects",
        ));
    }
    match words[2].as_str() {
        "coordinate" => {}
        "array" => return Err(lines.unsupported(
            "the dense `array` format".into(),
            "augur selects kernels for sparse matrices; store the matrix in `coordinate` format",
        )),
        other => return Err(lines.error(format!("bad banner: unknown format `{other}`"))),
    }
    let field = match words[3].as_str() {
        "real" | "double" => Field::Real,
        "integer" => Field::Integer,
        "pattern" => Field::Pattern,
        "complex" => {
            return Err(lines.unsupported(
                "the `complex` field".into(),
                "augur's kernels compute real-valued SpMV (f32/f64); complex values have no place to go",
            ))
        }
        other => return Err(lines.error(format!("bad banner: unknown field `{other}`"))),
    };
    let symmetry = match words[4].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::SkewSymmetric,
        "hermitian" => Symmetry::Hermitian,
        other => return Err(lines.error(format!("bad banner: unknown symmetry `{other}`"))),
    };
    if field == Field::Pattern && symmetry == Symmetry::SkewSymmetric {
        return Err(lines.error("bad banner: a `pattern` matrix cannot be skew-symmetric".into()));
    }
    Ok((field, symmetry))
}

fn read_size_line<R: BufRead>(
    lines: &mut Lines<R>,
) -> Result<(usize, usize, usize, u64), DatasetError> {
    if !lines.next_data_line()? {
        return Err(lines.error("missing size line `rows cols entries` after the banner".into()));
    }
    let toks: Vec<&[u8]> = lines.tokens().collect();
    if toks.len() != 3 {
        return Err(lines.error(format!(
            "bad size line `{}`: expected `rows cols entries` (3 integers), found {} fields",
            String::from_utf8_lossy(&lines.buf),
            toks.len()
        )));
    }
    let mut v = [0u64; 3];
    for (k, (t, what)) in toks.iter().zip(["rows", "cols", "entries"]).enumerate() {
        v[k] = parse_u64(t).ok_or_else(|| {
            lines.error(format!(
                "bad size line: {what} `{}` is not a non-negative integer",
                String::from_utf8_lossy(t)
            ))
        })?;
    }
    let name = lines.path.display().to_string();
    for (value, what) in v.iter().zip(["rows", "cols", "nnz"]) {
        if *value > MAX_INDEX as u64 {
            return Err(DatasetError::TooLarge {
                name: format!("{name}:{}", lines.line),
                what,
                value: *value as u128,
                max: MAX_INDEX,
            });
        }
    }
    if v[2] > 0 && (v[0] == 0 || v[1] == 0) {
        return Err(lines.error(format!(
            "size line declares {} entries in a {} x {} matrix",
            v[2], v[0], v[1]
        )));
    }
    Ok((v[0] as usize, v[1] as usize, v[2] as usize, lines.line))
}

#[inline]
fn parse_u64(t: &[u8]) -> Option<u64> {
    let t = t.strip_prefix(b"+").unwrap_or(t);
    if t.is_empty() || t.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in t {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (b - b'0') as u64;
    }
    Some(v)
}

/// One line of the file, for the errors about it.
struct At<'a> {
    path: &'a Path,
    line: u64,
    text: &'a [u8],
}

impl At<'_> {
    fn error(&self, msg: String) -> DatasetError {
        DatasetError::Parse {
            path: self.path.to_path_buf(),
            line: self.line,
            msg,
        }
    }

    /// The first four whitespace-separated tokens (a hand-rolled scanner: the line parser is the
    /// reader's hot loop).
    #[inline]
    fn tokens4(&self) -> [Option<&[u8]>; 4] {
        let t = self.text;
        let mut out = [None; 4];
        let mut pos = 0;
        for slot in out.iter_mut() {
            while pos < t.len() && t[pos].is_ascii_whitespace() {
                pos += 1;
            }
            if pos == t.len() {
                break;
            }
            let start = pos;
            while pos < t.len() && !t[pos].is_ascii_whitespace() {
                pos += 1;
            }
            *slot = Some(&t[start..pos]);
        }
        out
    }
}

/// Parse one entry line into 0-based (row, col) and the value.
#[inline]
fn parse_entry<T: Scalar>(
    lines: &At,
    field: Field,
    rows: usize,
    cols: usize,
) -> Result<(usize, usize, T), DatasetError> {
    let [ti, tj, tv, more] = lines.tokens4();
    let want = if field == Field::Pattern { 2 } else { 3 };
    let extra = more.is_some();
    let found = [ti, tj, tv].iter().filter(|t| t.is_some()).count() + extra as usize;
    if found != want || (field == Field::Pattern && tv.is_some()) {
        let layout = if field == Field::Pattern {
            "`row col`"
        } else {
            "`row col value`"
        };
        return Err(lines.error(format!(
            "expected {want} fields {layout}, found {}{} in `{}`",
            found,
            if extra { " or more" } else { "" },
            String::from_utf8_lossy(lines.text)
        )));
    }
    let i = parse_index(lines, ti.unwrap_or_default(), rows, "row")?;
    let j = parse_index(lines, tj.unwrap_or_default(), cols, "column")?;
    let v = match (field, tv) {
        (Field::Pattern, _) => 1.0,
        (_, Some(t)) => parse_value(lines, t, field)?,
        (_, None) => unreachable!("field count checked above"),
    };
    let t = T::from_f64(v);
    if !t.is_finite() {
        return Err(lines.error(format!(
            "value {v:e} overflows {}: read the file as f64",
            T::NAME
        )));
    }
    Ok((i, j, t))
}

#[inline]
fn parse_index(lines: &At, t: &[u8], n: usize, what: &str) -> Result<usize, DatasetError> {
    match parse_u64(t) {
        Some(0) => Err(lines.error(format!("{what} index 0: Matrix Market indices are 1-based"))),
        Some(v) if v as u128 <= n as u128 => Ok(v as usize - 1),
        Some(v) => Err(lines.error(format!(
            "{what} index {v} is out of range: the matrix has {n} {what}s"
        ))),
        None => Err(lines.error(format!(
            "{what} index `{}` is not a positive integer",
            String::from_utf8_lossy(t)
        ))),
    }
}

fn parse_value(lines: &At, t: &[u8], field: Field) -> Result<f64, DatasetError> {
    let bad = || {
        lines.error(format!(
            "value `{}` is not a {} number",
            String::from_utf8_lossy(t),
            if field == Field::Integer {
                "integer"
            } else {
                "real"
            }
        ))
    };
    let s = std::str::from_utf8(t).map_err(|_| bad())?;
    let v = if field == Field::Integer {
        s.parse::<i64>().map_err(|_| bad())? as f64
    } else {
        match s.parse::<f64>() {
            Ok(v) => v,
            // Fortran-style exponents (1.0D+03) appear in old collection files.
            Err(_) if s.contains(['d', 'D']) => s
                .replace(['d', 'D'], "e")
                .parse::<f64>()
                .map_err(|_| bad())?,
            Err(_) => return Err(bad()),
        }
    };
    if !v.is_finite() {
        return Err(lines.error(format!(
            "value `{s}` is not finite: augur refuses NaN and infinite entries"
        )));
    }
    Ok(v)
}
