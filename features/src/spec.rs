//! `kind:key=value,...` specs of attention and message shapes (matrices have their own, richer
//! spec grammar in augur-datasets).

use std::collections::BTreeMap;

use crate::FeatureError;

pub(crate) struct SpecParams<'a> {
    spec: &'a str,
    kind: &'static str,
    map: BTreeMap<&'a str, &'a str>,
    asked: Vec<&'static str>,
}

impl<'a> SpecParams<'a> {
    pub(crate) fn parse(spec: &'a str, kind: &'static str) -> Result<Self, FeatureError> {
        let err = |msg: String| FeatureError::Spec {
            spec: spec.to_string(),
            msg,
        };
        let rest = spec
            .strip_prefix(kind)
            .and_then(|r| r.strip_prefix(':'))
            .ok_or_else(|| err(format!("expected `{kind}:key=value,...`")))?;
        let mut map = BTreeMap::new();
        for kv in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| err(format!("`{kv}` is not `key=value`")))?;
            if map.insert(k.trim(), v.trim()).is_some() {
                return Err(err(format!("`{k}` given twice")));
            }
        }
        Ok(SpecParams {
            spec,
            kind,
            map,
            asked: Vec::new(),
        })
    }

    pub(crate) fn err(&self, msg: impl Into<String>) -> FeatureError {
        FeatureError::Spec {
            spec: self.spec.to_string(),
            msg: msg.into(),
        }
    }

    pub(crate) fn text(&mut self, key: &'static str) -> Option<&'a str> {
        self.asked.push(key);
        self.map.get(key).copied()
    }

    pub(crate) fn count(
        &mut self,
        key: &'static str,
        default: Option<usize>,
    ) -> Result<usize, FeatureError> {
        match (self.text(key), default) {
            (Some(v), _) => {
                parse_count(v).ok_or_else(|| self.err(format!("{key}=`{v}` is not a whole number")))
            }
            (None, Some(d)) => Ok(d),
            (None, None) => Err(self.err(format!("`{}` needs `{key}=`", self.kind))),
        }
    }

    pub(crate) fn finish(&self) -> Result<(), FeatureError> {
        match self.map.keys().find(|k| !self.asked.contains(k)) {
            Some(k) => Err(self.err(format!(
                "unknown parameter `{k}`; `{}` takes: {}",
                self.kind,
                self.asked.join(", ")
            ))),
            None => Ok(()),
        }
    }
}

/// A whole number written `4096`, `4e3`, `2^12`, `4_096`, or with a binary size suffix
/// `64KiB`, `1MiB`, `2GiB`.
pub fn parse_count(s: &str) -> Option<usize> {
    let s = s.trim().replace('_', "");
    let (num, mult) = [("KiB", 1u64 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)]
        .iter()
        .find_map(|(suf, m)| s.strip_suffix(suf).map(|n| (n.to_string(), *m)))
        .unwrap_or((s.clone(), 1));
    let v = match num.split_once('^') {
        Some((b, e)) => b.parse::<f64>().ok()?.powf(e.parse::<f64>().ok()?),
        None => num.parse::<f64>().ok()?,
    } * mult as f64;
    (v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64).then_some(v as usize)
}
