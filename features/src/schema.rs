//! Feature schemas: what a feature vector means, in order, with units and a version.

use serde::{Deserialize, Serialize};

/// What a feature costs: free (known from the input's shape), estimated from a fixed-size sample
/// of the data (cost bounded whatever the input's size), or a full pass over the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FeatureKind {
    Known,
    Sampled,
    Gathered,
}

/// One named feature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureDef {
    pub name: String,
    pub unit: String,
    pub kind: FeatureKind,
    /// One line: what it is and why it predicts kernel speed.
    pub doc: String,
}

/// An ordered, versioned list of features. Bump `version` whenever a feature is added, removed,
/// reordered or computed differently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureSchema {
    pub name: String,
    pub version: u32,
    pub features: Vec<FeatureDef>,
}

#[derive(Debug, thiserror::Error)]
pub enum FeatureError {
    #[error(
        "feature schema mismatch: expected `{expected}` v{expected_version}, got `{got}` v{got_version}{detail}"
    )]
    SchemaMismatch {
        expected: String,
        expected_version: u32,
        got: String,
        got_version: u32,
        detail: String,
    },
    #[error("feature schema JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// An attention or message shape that cannot be.
    #[error("invalid shape: {0}")]
    Shape(String),
    /// A link probe (the CUDA driver) could not answer.
    #[error("link probe: {0}")]
    Probe(String),
    /// A shape spec string that does not parse.
    #[error("spec `{spec}`: {msg}")]
    Spec { spec: String, msg: String },
}

impl FeatureSchema {
    /// Position of a feature by name.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.features.iter().position(|f| f.name == name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.features.iter().map(|f| f.name.as_str())
    }

    /// Refuse a schema that is not this one (name, version, and the features themselves).
    pub fn check_same(&self, other: &FeatureSchema) -> Result<(), FeatureError> {
        if self == other {
            return Ok(());
        }
        let detail =
            if self.name == other.name && self.version == other.version {
                let first = self
                    .features
                    .iter()
                    .zip(&other.features)
                    .position(|(a, b)| a != b)
                    .unwrap_or(self.features.len().min(other.features.len()));
                format!(
                " (same name and version but features differ from position {first}: `{}` vs `{}`)",
                self.features.get(first).map_or("<none>", |f| f.name.as_str()),
                other.features.get(first).map_or("<none>", |f| f.name.as_str())
            )
            } else {
                String::new()
            };
        Err(FeatureError::SchemaMismatch {
            expected: self.name.clone(),
            expected_version: self.version,
            got: other.name.clone(),
            got_version: other.version,
            detail,
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a schema always serializes")
    }

    pub fn from_json(s: &str) -> Result<FeatureSchema, FeatureError> {
        Ok(serde_json::from_str(s)?)
    }
}

/// Define a feature struct (one `f64` field per feature, documented) with its schema and
/// `values()` in schema order: one list of `name: "unit", Known|Sampled|Gathered, "doc";` lines is the
/// single source of names, order, units and documentation.
macro_rules! feature_struct {
    (
        $(#[$meta:meta])*
        $name:ident, $schema:literal, $version:expr,
        { $( $field:ident : $unit:literal, $kind:ident, $doc:literal; )* }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        pub struct $name {
            $( #[doc = $doc] pub $field: f64, )*
        }

        impl $name {
            /// The schema these features follow.
            pub fn schema() -> $crate::schema::FeatureSchema {
                $crate::schema::FeatureSchema {
                    name: $schema.into(),
                    version: $version,
                    features: vec![$($crate::schema::FeatureDef {
                        name: stringify!($field).into(),
                        unit: $unit.into(),
                        kind: $crate::schema::FeatureKind::$kind,
                        doc: $doc.into(),
                    }),*],
                }
            }

            /// Values in schema order.
            pub fn values(&self) -> Vec<f64> {
                vec![$(self.$field),*]
            }

            /// Write the values in schema order into `out` (at least one slot per feature), without
            /// allocating: the selector's hot path.
            #[inline]
            pub fn write_values(&self, out: &mut [f64]) {
                let mut i = 0;
                $( out[i] = self.$field; i += 1; )*
                let _ = i;
            }

            /// From values in schema order; None unless there is exactly one per feature.
            pub fn from_values(v: &[f64]) -> Option<Self> {
                let mut it = v.iter().copied();
                let f = $name { $($field: it.next()?,)* };
                it.next().is_none().then_some(f)
            }

            /// Every feature NaN (not computed).
            #[allow(dead_code)]
            pub(crate) fn all_nan() -> Self {
                $name { $($field: f64::NAN,)* }
            }
        }
    };
}
pub(crate) use feature_struct;
