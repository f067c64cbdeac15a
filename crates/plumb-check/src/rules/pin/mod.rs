//! Pinning: images, charts and CI actions named by something that cannot move.

pub mod action_not_pinned;
mod chart_images;
pub mod floating_chart_version;
pub mod image_without_digest;
mod images;
mod version;
