//! Errors of the analysis tools.

#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error(transparent)]
    Db(#[from] dcpi_collect::CollectError),

    #[error("cannot read image {path}: {detail}")]
    Image { path: String, detail: String },

    #[error("{0}")]
    Usage(String),
}

pub type Result<T> = std::result::Result<T, AnalyzeError>;
