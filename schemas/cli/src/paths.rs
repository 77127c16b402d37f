//! Paths given on the command line or in the environment mean what they say where the
//! command starts: each is made absolute against the current directory once, as it is
//! parsed ([`absolute`]), before anything is mounted in a sandbox, handed to a child
//! process or looked up from another directory.

use std::path::PathBuf;

/// The clap value parser of every path flag: `value` resolved against the current
/// directory (`std::path::absolute`: not canonicalized, symbolic links are kept). Used as
/// `#[arg(long, value_parser = bench_cli::paths::absolute)]`; clap applies it to defaults
/// and environment variables too.
pub fn absolute(value: &str) -> Result<PathBuf, String> {
    if value.is_empty() {
        return Err("an empty path".to_owned());
    }
    std::path::absolute(value)
        .map_err(|e| format!("cannot resolve {value:?} against the current directory: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_path_is_resolved_against_the_current_directory() {
        let cwd = std::env::current_dir().expect("current directory");
        assert_eq!(
            absolute("scenarios/envs").expect("resolves"),
            cwd.join("scenarios/envs")
        );
        assert_eq!(
            absolute("/data/x").expect("resolves"),
            PathBuf::from("/data/x")
        );
        assert!(absolute("").is_err());
    }
}
