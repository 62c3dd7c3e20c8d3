//! Views: renderings of the models, text for people (JSON is the models' serde form).
pub mod cpi_text;
pub mod latency_svg;
pub mod latency_text;
pub mod list_text;
pub mod model_text;
pub mod prof_text;
pub mod report_text;
