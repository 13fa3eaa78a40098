//! Reading the files a user names, bounded: plans, experiments, workloads, policies and
//! journals are read through [`read_text`], which stops at a size limit and says so (file
//! and limit named) instead of reading an endless input such as `/dev/zero` until the
//! kernel kills the process.

use std::io::Read;
use std::path::Path;

/// The largest plan, experiment, workload or policy read: the parser's own cap
/// ([`brownout_core::plan::source::MAX_TEXT_BYTES`]).
pub const MAX_DOCUMENT: u64 = brownout_core::plan::source::MAX_TEXT_BYTES as u64;

/// The largest journal read (`journal import`, `report`): journals carry every sample.
pub const MAX_JOURNAL: u64 = 256 << 20;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{file}: cannot read: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: larger than the limit of {limit} bytes (is it the right file?)")]
    TooLarge { file: String, limit: u64 },
    #[error("{file}: not UTF-8 text")]
    NotText { file: String },
}

impl ReadError {
    /// The message without the file name in front (for errors that name the file apart).
    pub fn reason(&self) -> String {
        match self {
            ReadError::Io { source, .. } => format!("cannot read: {source}"),
            ReadError::TooLarge { limit, .. } => {
                format!("larger than the limit of {limit} bytes (is it the right file?)")
            }
            ReadError::NotText { .. } => "not UTF-8 text".to_string(),
        }
    }
}

/// The bytes of `path`, at most `limit` of them (an error beyond).
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = path.display().to_string();
    let io = |source| ReadError::Io {
        file: file.clone(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    f.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { file, limit });
    }
    Ok(bytes)
}

/// The text of `path`, at most `limit` bytes of it (an error beyond, or if not UTF-8).
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).map_err(|_| ReadError::NotText {
        file: path.display().to_string(),
    })
}

/// A plan, experiment, workload or policy file (at most [`MAX_DOCUMENT`] bytes).
pub fn read_document(path: &Path) -> Result<String, ReadError> {
    read_text(path, MAX_DOCUMENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_input_stops_at_the_limit() {
        let e = read_text(Path::new("/dev/zero"), 1024).expect_err("endless");
        assert!(
            e.to_string()
                .contains("/dev/zero: larger than the limit of 1024 bytes"),
            "{e}"
        );
    }

    #[test]
    fn small_files_read_whole_and_missing_ones_say_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("a.yaml");
        std::fs::write(&p, "seed: 1\n").expect("write");
        assert_eq!(read_text(&p, 8).expect("fits"), "seed: 1\n");
        assert!(matches!(read_text(&p, 7), Err(ReadError::TooLarge { .. })));
        let e = read_document(&dir.path().join("none.yaml")).expect_err("missing");
        assert!(e.to_string().contains("none.yaml: cannot read"), "{e}");
    }
}
