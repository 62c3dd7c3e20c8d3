//! Views: renderings of the models, text for people (JSON is the models' serde form).
pub mod prof_text;
