//! Where an image comes from, as skopeo names it, and the digest that pins it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::ImageError;

/// An image as skopeo names it: `docker://REGISTRY/NAME:TAG` (or `@sha256:...`),
/// `oci:DIR:TAG` or `docker-archive:FILE`. Nothing else is taken: a container daemon
/// (`docker-daemon:`) or a bare name would make the environment depend on the host.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ImageRef(String);

/// The transports an [`ImageRef`] may use, with what follows each.
const TRANSPORTS: [(&str, &str); 3] = [
    ("docker://", "REGISTRY/NAME:TAG"),
    ("oci:", "DIR:TAG"),
    ("docker-archive:", "FILE"),
];

impl ImageRef {
    /// The reference with the placeholders of a template filled for one SWE-bench
    /// instance: `{instance_id}` as written, `{image_id}` in SWE-bench's image-name form
    /// ([`image_id`]).
    ///
    /// # Errors
    ///
    /// If another `{...}` placeholder is left, or the result is no image reference.
    pub fn from_template(template: &str, instance_id: &str) -> Result<Self, ImageError> {
        let filled = template
            .replace("{instance_id}", instance_id)
            .replace("{image_id}", &image_id(instance_id));
        if let Some(start) = filled.find('{') {
            let rest = &filled[start..];
            let end = rest.find('}').map_or(rest.len(), |i| i + 1);
            return Err(ImageError::Reference {
                reference: template.to_owned(),
                reason: format!(
                    "unknown placeholder {}: the template takes {{instance_id}} and {{image_id}}",
                    &rest[..end]
                ),
            });
        }
        filled.parse()
    }

    /// The transport prefix: `docker://`, `oci:` or `docker-archive:`.
    pub fn transport(&self) -> &str {
        TRANSPORTS
            .iter()
            .map(|(prefix, _)| *prefix)
            .find(|prefix| self.0.starts_with(prefix))
            .unwrap_or_default()
    }

    /// The reference as skopeo takes it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The reference that names exactly the manifest `digest`, for transports that can
    /// (a registry); the reference as written for the others, whose content the store
    /// checks before and after copying.
    pub(crate) fn at_digest(&self, digest: &Digest) -> String {
        match self.0.strip_prefix("docker://") {
            Some(rest) => {
                let name = rest.split_once('@').map_or(rest, |(name, _)| name);
                // A tag is the part after the last ':' that follows the last '/'.
                let slash = name.rfind('/').map_or(0, |i| i + 1);
                let name = match name[slash..].rfind(':') {
                    Some(colon) => &name[..slash + colon],
                    None => name,
                };
                format!("docker://{name}@{digest}")
            }
            None => self.0.clone(),
        }
    }
}

impl FromStr for ImageRef {
    type Err = ImageError;

    fn from_str(reference: &str) -> Result<Self, ImageError> {
        let invalid = |reason: String| ImageError::Reference {
            reference: reference.to_owned(),
            reason,
        };
        let Some((prefix, shape)) = TRANSPORTS
            .iter()
            .find(|(prefix, _)| reference.starts_with(prefix))
        else {
            let forms: Vec<String> = TRANSPORTS.iter().map(|(p, s)| format!("{p}{s}")).collect();
            return Err(invalid(format!("it must be one of {}", forms.join(", "))));
        };
        let rest = &reference[prefix.len()..];
        if rest.is_empty() || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid(format!(
                "after {prefix} comes {shape}, without spaces"
            )));
        }
        Ok(Self(reference.to_owned()))
    }
}

impl TryFrom<String> for ImageRef {
    type Error = ImageError;

    fn try_from(reference: String) -> Result<Self, ImageError> {
        reference.parse()
    }
}

impl From<ImageRef> for String {
    fn from(image: ImageRef) -> String {
        image.0
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// SWE-bench's image-name form of an instance id: `__` replaced by `_1776_`, then
/// lower-cased (`django__django-11099` → `django_1776_django-11099`).
pub fn image_id(instance_id: &str) -> String {
    instance_id.replace("__", "_1776_").to_lowercase()
}

/// A manifest digest, `sha256:` and 64 lower-case hex digits: what pins an image.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Digest(String);

impl Digest {
    /// The 64 hex digits, the image's name in the cache.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }

    /// `sha256:` and the hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Digest {
    type Err = ImageError;

    fn from_str(digest: &str) -> Result<Self, ImageError> {
        let hex = digest.strip_prefix("sha256:").unwrap_or_default();
        if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(Self(digest.to_owned()))
        } else {
            Err(ImageError::Digest(digest.to_owned()))
        }
    }
}

impl TryFrom<String> for Digest {
    type Error = ImageError;

    fn try_from(digest: String) -> Result<Self, ImageError> {
        digest.parse()
    }
}

impl From<Digest> for String {
    fn from(digest: Digest) -> String {
        digest.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:40fc03706d5b5194bbdfa8afb2b5c64e8e463de7c5b300c53f1559e988a3b7b8";

    #[test]
    fn the_three_transports_are_taken_and_anything_else_is_refused_with_the_forms() {
        for ok in [
            "docker://docker.io/swebench/sweb.eval.x86_64.django_1776_django-11099:latest",
            "oci:/var/images/py39:v1",
            "docker-archive:/tmp/py39.tar",
        ] {
            assert_eq!(ok.parse::<ImageRef>().expect("as set up").as_str(), ok);
        }
        for bad in [
            "ubuntu:22.04",
            "docker-daemon:x:y",
            "oci:",
            "oci:/a b:t",
            "",
        ] {
            let error = bad.parse::<ImageRef>().expect_err("an error").to_string();
            assert!(error.contains(bad), "{error}");
        }
        let error = "ubuntu:22.04"
            .parse::<ImageRef>()
            .expect_err("an error")
            .to_string();
        assert!(error.contains("docker://REGISTRY/NAME:TAG"), "{error}");
    }

    #[test]
    fn a_template_is_filled_in_swe_bench_form_and_an_unknown_placeholder_is_named() {
        let image = ImageRef::from_template(
            "docker://docker.io/swebench/sweb.eval.x86_64.{image_id}:latest",
            "django__django-11099",
        )
        .expect("as set up");
        assert_eq!(
            image.as_str(),
            "docker://docker.io/swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
        );
        assert_eq!(
            image_id("Astropy__Astropy-12907"),
            "astropy_1776_astropy-12907"
        );
        let raw =
            ImageRef::from_template("oci:/images/{instance_id}:t", "a__b-1").expect("as set up");
        assert_eq!(raw.as_str(), "oci:/images/a__b-1:t");
        let error = ImageRef::from_template("oci:/images/{instance}:t", "a__b-1")
            .expect_err("an error")
            .to_string();
        assert!(error.contains("{instance}"), "{error}");
    }

    #[test]
    fn a_registry_image_is_copied_by_its_digest_not_its_tag() {
        let digest: Digest = DIGEST.parse().expect("as set up");
        let at = |r: &str| r.parse::<ImageRef>().expect("as set up").at_digest(&digest);
        assert_eq!(
            at("docker://localhost:5000/team/py39:v1"),
            format!("docker://localhost:5000/team/py39@{DIGEST}")
        );
        assert_eq!(
            at("docker://localhost:5000/py39"),
            format!("docker://localhost:5000/py39@{DIGEST}")
        );
        assert_eq!(
            at("docker://docker.io/x/y@sha256:0000"),
            format!("docker://docker.io/x/y@{DIGEST}")
        );
        assert_eq!(at("oci:/images/py39:v1"), "oci:/images/py39:v1");
    }

    #[test]
    fn a_digest_is_sha256_and_64_lower_case_hex_digits() {
        let digest: Digest = DIGEST.parse().expect("as set up");
        assert_eq!(digest.hex().len(), 64);
        for bad in [
            "sha256:ABC",
            "md5:00",
            &DIGEST.to_uppercase(),
            &DIGEST[..70],
        ] {
            assert!(bad.parse::<Digest>().is_err(), "{bad}");
        }
    }
}
