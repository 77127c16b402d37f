//! Why a page's data could not be had, for the page's reads and its children's.

use std::sync::Arc;

use crate::compare;
use crate::serve::db::DbError;

/// Why a page's data could not be had.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// A read failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The comparison failed.
    #[error(transparent)]
    Compare(#[from] compare::CompareError),
    /// Nothing is stored under this name.
    #[error("{0}")]
    NotFound(String),
    /// A computation shared by several requests failed (see [`DataError::root`]).
    #[error(transparent)]
    Shared(Arc<DataError>),
    /// A computation in the background ended without an answer (it panicked or the
    /// server is stopping).
    #[error("the computation stopped: {0}")]
    Stopped(String),
}

impl DataError {
    /// The error itself, out of the [`DataError::Shared`] it may be wrapped in.
    pub fn root(&self) -> &DataError {
        match self {
            DataError::Shared(inner) => inner.root(),
            other => other,
        }
    }
}
