//! Output files of `train`, `export` and `eval` (issue 19): an output is never one of the
//! command's inputs, an existing file of another kind (a runs table, a model) is replaced only
//! with `--force`, and what is written lands through a temporary file and a rename, so an
//! existing file is replaced only by a complete one and no temporary is left behind.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// A runs CSV is written plain, row by row (and appended to on `--resume`): a name ending in
/// `.gz` is refused before anything is measured, rather than left holding text that no gzip
/// reader opens. Runs read gzipped, so gzip it afterwards.
pub(crate) fn plain_runs_out(path: &Path) -> anyhow::Result<()> {
    if path.extension().is_some_and(|e| e == "gz") {
        bail!(
            "{}: runs are written as plain CSV; write {} and gzip it afterwards (augur reads \
             .csv.gz runs as they are)",
            path.display(),
            path.with_extension("").display()
        );
    }
    Ok(())
}

/// What an output is about to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Writes {
    /// A model JSON (`train --out`): an existing model may be replaced.
    Model,
    /// A report (export text/DOT/Rust, eval CSV/SVG): an existing report may be replaced.
    Report,
}

/// What an existing file looks like, by its first bytes: `Some("a model")`, `Some("a runs
/// table")`, or None (anything else, e.g. an earlier report).
fn kind_of(path: &Path) -> Option<&'static str> {
    use std::io::Read;
    let mut head = vec![0u8; 4096];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .ok()?;
    let text = String::from_utf8_lossy(&head[..n]);
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('{') && t.contains("\"format\"") && t.contains("\"augur") {
        return Some("a model");
    }
    let first = t.lines().next().unwrap_or("");
    let col = first.split(',').next().unwrap_or("").trim_matches('"');
    let runs = (col == "matrix" && first.contains(",family,"))
        || (col == "shape" && first.contains(",schedule,"))
        || (col == "shape" && first.contains(",baseline,"))
        || augur_models::comm::is_comm_header(col);
    runs.then_some("a runs table")
}

/// The same file, by canonical path (and on Unix by device and inode, so that a hard link is
/// caught too).
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (a.metadata(), b.metadata()) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Refuse `out` (given as `flag`) when it is a directory, one of `inputs`, or (without `force`)
/// an existing file of another kind than `writes`.
pub(crate) fn check(
    out: &Path,
    flag: &str,
    inputs: &[PathBuf],
    writes: Writes,
    force: bool,
) -> anyhow::Result<()> {
    if out.is_dir() {
        bail!("{flag} {}: is a directory; give a file path", out.display());
    }
    if !out.exists() {
        return Ok(());
    }
    if let Some(i) = inputs.iter().find(|i| same_file(out, i)) {
        bail!(
            "{flag} {}: refusing to overwrite an input of this command ({}); choose another path",
            out.display(),
            i.display()
        );
    }
    if force {
        return Ok(());
    }
    match (kind_of(out), writes) {
        (Some("a model"), Writes::Model) | (None, _) => Ok(()),
        (Some(kind), _) => bail!(
            "{flag} {}: exists and is {kind}, which this command would replace with {}; pass \
             --force to replace it",
            out.display(),
            match writes {
                Writes::Model => "a model",
                Writes::Report => "a report",
            }
        ),
    }
}

/// Write `bytes` to `out` through `<out>.tmp` and a rename (the temporary removed if the rename
/// fails).
pub(crate) fn write(out: &Path, bytes: impl AsRef<[u8]>) -> anyhow::Result<()> {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = out.with_file_name(name);
    std::fs::write(&tmp, bytes).with_context(|| format!("write {}", tmp.display()))?;
    if let Err(e) = std::fs::rename(&tmp, out) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("write {}", out.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_inputs_directories_and_force() {
        let dir = std::env::temp_dir().join(format!("augur-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let runs = dir.join("runs.csv");
        std::fs::write(&runs, "matrix,family,source,rows\nm,f,s,1\n").unwrap();
        let model = dir.join("m.json");
        std::fs::write(&model, "{\n  \"format\": \"augur-model\",\n  \"x\": 1\n}").unwrap();
        let report = dir.join("r.txt");
        std::fs::write(&report, "if nnz < 5: ...").unwrap();
        assert_eq!(kind_of(&runs), Some("a runs table"));
        assert_eq!(kind_of(&model), Some("a model"));
        assert_eq!(kind_of(&report), None);
        let ins = vec![runs.clone()];
        // An input is refused even with --force, also through another spelling of its path.
        let other = dir.join(".").join("runs.csv");
        let e = check(&other, "--out", &ins, Writes::Model, true).unwrap_err();
        assert!(e.to_string().contains("an input"), "{e}");
        // A model may replace a model; a report may replace a report; not the other kinds.
        check(&model, "--out", &[], Writes::Model, false).unwrap();
        check(&report, "--out", &[], Writes::Report, false).unwrap();
        let e = check(&model, "--out", &[], Writes::Report, false).unwrap_err();
        assert!(e.to_string().contains("is a model") && e.to_string().contains("--force"));
        check(&model, "--out", &[], Writes::Report, true).unwrap();
        let e = check(&dir, "--svg", &[], Writes::Report, true).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        // A write into a directory's place fails naming the path and leaves no temporary.
        let sub = dir.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        assert!(write(&sub, "x").is_err());
        assert!(!dir.join("sub.tmp").exists());
        write(&report, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&report).unwrap(), "new");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
