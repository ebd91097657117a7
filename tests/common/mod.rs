//! Helpers shared by the integration tests (each test binary compiles the modules it uses).
#![allow(dead_code)] // not every test binary uses every helper

pub mod events;
pub mod scripted_http;
