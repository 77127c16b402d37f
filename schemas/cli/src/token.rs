//! `--bearer-token`: the secret a server of benchstream (`agent-runner otlp`,
//! `bench-analysis serve`) requires of its clients, checked without telling by its timing
//! how much of a wrong token matched.

use secrecy::{ExposeSecret as _, SecretString};

/// A bearer token; its `Debug` does not show it.
#[derive(Debug, Clone)]
pub struct BearerToken(SecretString);

impl BearerToken {
    /// The token of `--bearer-token`, or why it cannot be one: it must be non-empty
    /// printable ASCII without spaces (what an `Authorization` header can carry).
    pub fn new(token: SecretString) -> Result<BearerToken, String> {
        let text = token.expose_secret();
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("--bearer-token must be non-empty printable ASCII without spaces".into());
        }
        Ok(BearerToken(token))
    }

    /// Whether an `Authorization` header value carries this token (`Bearer <token>`).
    pub fn admits(&self, authorization: &[u8]) -> bool {
        authorization
            .strip_prefix(b"Bearer ")
            .is_some_and(|given| self.is(given))
    }

    /// Whether `given` is this token. Compares every byte whatever the first difference,
    /// so the time taken does not tell how much matched.
    pub fn is(&self, given: &[u8]) -> bool {
        let expected = self.0.expose_secret().as_bytes();
        given.len() == expected.len()
            && given
                .iter()
                .zip(expected)
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_is_admitted() {
        let token = BearerToken::new("s3cret".into()).expect("valid");
        assert!(token.admits(b"Bearer s3cret"));
        assert!(token.is(b"s3cret"));
        assert!(!token.admits(b"Bearer s3cre"));
        assert!(!token.admits(b"Bearer s3cretx"));
        assert!(!token.admits(b"Basic s3cret"));
        assert!(!format!("{token:?}").contains("s3cret"));
        for bad in ["", "a b", "caf\u{e9}", "tab\t"] {
            assert!(BearerToken::new(bad.into()).is_err(), "{bad:?}");
        }
    }
}
