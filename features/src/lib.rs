//! # augur-features
//!
//! Second stage of augur's data flow (datasets -> **features** -> kernels -> models -> selector):
//! named, versioned feature schemas and their extractors (SpMV matrix features, attention shapes,
//! message sizes). Empty until the Features issue lands; the crate exists now so that the
//! workspace has the layout of the design card.
