//! Store URLs: `file:///dir` and `s3://bucket/prefix?endpoint=URL&region=R`.

use crate::backend::{Backend, LocalBackend, S3Backend, S3Location};
use crate::error::StateError;
use std::path::PathBuf;

/// A parsed store URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreLocation {
    File(PathBuf),
    S3(S3Location),
}

fn invalid(url: &str, reason: impl Into<String>) -> StateError {
    StateError::InvalidUrl {
        url: url.to_string(),
        reason: reason.into(),
    }
}

impl StoreLocation {
    /// Reads a store URL; a plain directory path (no scheme) is taken as `file://` of it,
    /// relative to the current directory.
    pub fn parse(text: &str) -> Result<Self, StateError> {
        if text.is_empty() {
            return Err(invalid(
                text,
                "empty: use file:///dir, a directory path, or s3://bucket/prefix",
            ));
        }
        let url = match url::Url::parse(text) {
            Ok(url) => url,
            Err(url::ParseError::RelativeUrlWithoutBase) => {
                let path = std::path::absolute(text)
                    .map_err(|e| invalid(text, format!("{e}; use file:///absolute/directory")))?;
                return Ok(StoreLocation::File(path));
            }
            Err(e) => return Err(invalid(text, e.to_string())),
        };
        match url.scheme() {
            "file" => {
                if url.query().is_some() {
                    return Err(invalid(text, "file:// URLs take no parameters"));
                }
                let path = url
                    .to_file_path()
                    .map_err(|()| invalid(text, "expected file:///absolute/directory"))?;
                Ok(StoreLocation::File(path))
            }
            "s3" => {
                let bucket = url
                    .host_str()
                    .filter(|b| !b.is_empty())
                    .ok_or_else(|| invalid(text, "no bucket: expected s3://bucket/prefix"))?
                    .to_string();
                let prefix = url.path().trim_matches('/').to_string();
                let mut endpoint = None;
                let mut region = None;
                for (key, value) in url.query_pairs() {
                    match key.as_ref() {
                        "endpoint" => {
                            let parsed = url::Url::parse(&value)
                                .map_err(|e| invalid(text, format!("endpoint: {e}")))?;
                            if !matches!(parsed.scheme(), "http" | "https") {
                                return Err(invalid(text, "endpoint must be http:// or https://"));
                            }
                            endpoint = Some(value.trim_end_matches('/').to_string());
                        }
                        "region" => region = Some(value.into_owned()),
                        other => {
                            return Err(invalid(
                                text,
                                format!("unknown parameter {other:?} (known: endpoint, region)"),
                            ))
                        }
                    }
                }
                Ok(StoreLocation::S3(S3Location {
                    bucket,
                    prefix,
                    endpoint,
                    region,
                }))
            }
            other => Err(invalid(
                text,
                format!("unknown scheme {other:?}: use file:///dir or s3://bucket/prefix"),
            )),
        }
    }

    /// The default store: `$XDG_DATA_HOME/plumb/state`, else `~/.local/share/plumb/state`.
    pub fn default_local() -> Result<Self, StateError> {
        let base = std::env::var_os("XDG_DATA_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".local").join("share"))
            })
            .ok_or_else(|| {
                invalid(
                    "",
                    "no --store given and neither XDG_DATA_HOME nor HOME is set",
                )
            })?;
        Ok(StoreLocation::File(base.join("plumb").join("state")))
    }

    /// Opens the backend this location names.
    pub fn open(&self) -> Result<Box<dyn Backend>, StateError> {
        Ok(match self {
            StoreLocation::File(path) => Box::new(LocalBackend::new(path.clone())),
            StoreLocation::S3(location) => Box::new(S3Backend::new(location.clone())?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_file_and_s3_urls() {
        assert_eq!(
            StoreLocation::parse("file:///var/lib/plumb").ok(),
            Some(StoreLocation::File(PathBuf::from("/var/lib/plumb")))
        );
        let s3 = StoreLocation::parse(
            "s3://state/platform/prod?endpoint=http://127.0.0.1:9000&region=eu-west-1",
        );
        assert_eq!(
            s3.ok(),
            Some(StoreLocation::S3(S3Location {
                bucket: "state".to_string(),
                prefix: "platform/prod".to_string(),
                endpoint: Some("http://127.0.0.1:9000".to_string()),
                region: Some("eu-west-1".to_string()),
            }))
        );
    }

    #[test]
    fn refuses_unknown_schemes_and_parameters() {
        assert!(StoreLocation::parse("gs://bucket").is_err());
        assert!(StoreLocation::parse("s3://bucket?endpiont=x").is_err());
        assert!(StoreLocation::parse("s3:///prefix").is_err());
        assert!(StoreLocation::parse("file:///x?y=1").is_err());
        assert!(StoreLocation::parse("").is_err());
    }

    #[test]
    fn a_plain_path_is_a_directory() {
        assert_eq!(
            StoreLocation::parse("/var/lib/plumb").ok(),
            Some(StoreLocation::File(PathBuf::from("/var/lib/plumb")))
        );
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            StoreLocation::parse("state/dir").ok(),
            Some(StoreLocation::File(cwd.join("state/dir")))
        );
    }
}
