//! Where the built site is (the folder holding `pkg/name.txt`, the wasm,
//! JavaScript and CSS): the folder an operator names, or else beside the
//! executable, so `switchyard serve` runs from any folder. Without one the
//! server refuses to start and says where it looked: a page without its
//! files would be dead.

use std::path::{Path, PathBuf};

/// What marks a folder as a built site.
const MARK: &str = "pkg/name.txt";

/// The built site's folder, absolute: `given` (it must hold a site), or the
/// first of [`candidates`] that does.
pub fn locate(given: Option<&str>) -> Result<String, String> {
    let found = match given {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if !is_site(&dir) {
                return Err(format!(
                    "--site-root {}: no built site there (it has no {MARK}); build one with `make build`",
                    dir.display()
                ));
            }
            dir
        }
        None => {
            let exe = std::env::current_exe().ok();
            let tried = candidates(exe.as_deref(), std::env::current_dir().ok().as_deref());
            match tried.iter().find(|dir| is_site(dir)) {
                Some(dir) => dir.clone(),
                None => {
                    let places: Vec<String> =
                        tried.iter().map(|d| d.display().to_string()).collect();
                    return Err(format!(
                        "no built site found: looked for {MARK} in {}; build it with `make build` \
                         and keep its site/ folder beside the executable, or give --site-root",
                        places.join(", ")
                    ));
                }
            }
        }
    };
    let absolute = std::fs::canonicalize(&found)
        .map_err(|e| format!("the site folder {}: {e}", found.display()))?;
    absolute
        .to_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("the site folder {} is not UTF-8", absolute.display()))
}

/// Where a site may be, in order: `site/` beside the executable (a
/// deployment's layout), `../site` from it (the build tree:
/// `target/release/switchyard` beside `target/site`), and `target/site`
/// under the working folder (a checkout).
fn candidates(exe: Option<&Path>, cwd: Option<&Path>) -> Vec<PathBuf> {
    let mut tried = Vec::new();
    if let Some(dir) = exe.and_then(Path::parent) {
        tried.push(dir.join("site"));
        if let Some(up) = dir.parent() {
            tried.push(up.join("site"));
        }
    }
    if let Some(cwd) = cwd {
        tried.push(cwd.join("target").join("site"));
    }
    tried
}

fn is_site(dir: &Path) -> bool {
    dir.join(MARK).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_is_looked_for_beside_the_executable_then_in_the_checkout() {
        let tried = candidates(
            Some(Path::new("/opt/switchyard/bin/switchyard")),
            Some(Path::new("/home/ana")),
        );
        assert_eq!(
            tried,
            [
                PathBuf::from("/opt/switchyard/bin/site"),
                PathBuf::from("/opt/switchyard/site"),
                PathBuf::from("/home/ana/target/site"),
            ]
        );
    }

    #[test]
    fn a_named_folder_without_a_site_is_refused_with_its_path() {
        let dir = std::env::temp_dir().join(format!("switchyard-no-site-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = locate(dir.to_str()).unwrap_err();
        assert!(err.contains(&dir.display().to_string()), "{err}");
        assert!(err.contains("pkg/name.txt"), "{err}");
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        std::fs::write(dir.join("pkg/name.txt"), "switchyard-0123456789abcdef\n").unwrap();
        let found = locate(dir.to_str()).unwrap();
        assert!(Path::new(&found).is_absolute(), "{found}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
