//! `precompress [--best] FOLDER`: writes `<file>.br` and `<file>.gz` beside
//! each `.wasm`, `.js` and `.css` file of a built site's folder, which the
//! server sends to browsers that accept them. Brotli and gzip come from
//! maintained libraries, so every build has both whatever tools the machine
//! has. A copy newer than its file is kept; a new one is written beside it
//! and renamed into place, so a server never sends half a file. `--best`
//! (the release build) takes brotli's smallest setting, 11; otherwise 5,
//! which is quick.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The files worth sending compressed: the rest are small or compressed.
const KINDS: [&str; 3] = ["wasm", "js", "css"];

fn main() -> ExitCode {
    let mut best = false;
    let mut folder = None;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--best" => best = true,
            _ if folder.is_none() => folder = Some(PathBuf::from(arg)),
            _ => return usage(),
        }
    }
    let Some(folder) = folder else {
        return usage();
    };
    match precompress(&folder, if best { 11 } else { 5 }) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("precompress: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: precompress [--best] FOLDER");
    ExitCode::from(2)
}

/// Compresses every file of `folder` worth it whose copies are missing or
/// older than it.
fn precompress(folder: &Path, brotli_quality: i32) -> Result<(), String> {
    let entries = std::fs::read_dir(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("{}: {e}", folder.display()))?
            .path();
        let worth_it = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| KINDS.contains(&e));
        if !worth_it || !path.is_file() {
            continue;
        }
        for (suffix, write) in [("br", Codec::Brotli(brotli_quality)), ("gz", Codec::Gzip)] {
            let copy = with_suffix(&path, suffix);
            if is_fresh(&copy, &path) {
                continue;
            }
            compress(&path, &copy, write).map_err(|e| format!("{}: {e}", copy.display()))?;
        }
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Codec {
    Brotli(i32),
    Gzip,
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// Whether `copy` exists and is not older than `original`.
fn is_fresh(copy: &Path, original: &Path) -> bool {
    let modified = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    matches!((modified(copy), modified(original)), (Some(c), Some(o)) if c >= o)
}

/// Writes `original` compressed to `copy`, through a temporary file renamed
/// into place.
fn compress(original: &Path, copy: &Path, codec: Codec) -> std::io::Result<()> {
    let partial = with_suffix(copy, "partial");
    let mut input = BufReader::new(File::open(original)?);
    let mut output = BufWriter::new(File::create(&partial)?);
    match codec {
        Codec::Brotli(quality) => {
            let params = brotli::enc::BrotliEncoderParams {
                quality,
                lgwin: 22,
                ..Default::default()
            };
            brotli::BrotliCompress(&mut input, &mut output, &params)?;
        }
        Codec::Gzip => {
            let mut gzip = flate2::write::GzEncoder::new(&mut output, flate2::Compression::best());
            std::io::copy(&mut input, &mut gzip)?;
            gzip.finish()?;
        }
    }
    output
        .into_inner()
        .map_err(|e| e.into_error())?
        .sync_all()?;
    std::fs::rename(&partial, copy)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn every_kind_gets_both_copies_that_open_to_the_same_bytes() {
        let dir = std::env::temp_dir().join(format!("precompress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = "fn main() { console.log('chip'); }\n".repeat(200);
        for name in ["a.js", "b.css", "c.wasm", "d.txt"] {
            std::fs::write(dir.join(name), &text).unwrap();
        }
        precompress(&dir, 5).unwrap();
        for name in ["a.js", "b.css", "c.wasm"] {
            let file = dir.join(name);
            let mut back = String::new();
            brotli::Decompressor::new(File::open(with_suffix(&file, "br")).unwrap(), 4096)
                .read_to_string(&mut back)
                .unwrap();
            assert_eq!(back, text, "{name}.br");
            let mut back = String::new();
            flate2::read::GzDecoder::new(File::open(with_suffix(&file, "gz")).unwrap())
                .read_to_string(&mut back)
                .unwrap();
            assert_eq!(back, text, "{name}.gz");
            assert!(is_fresh(&with_suffix(&file, "br"), &file));
        }
        assert!(!dir.join("d.txt.br").exists(), "not worth it");
        assert!(!dir.join("a.js.br.partial").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
