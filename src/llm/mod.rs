//! llm layer.
