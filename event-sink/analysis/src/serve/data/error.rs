//! Why a page's data could not be had, for the page's reads and its children's.

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
}
