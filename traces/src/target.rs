//! GPU targets (`gfx1100`, `gfx1201`, `gfx950`, ...) and the ISA family each belongs to.

use std::fmt;
use std::str::FromStr;

/// The instruction-set / trace family a target belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Family {
    /// gfx11 (RDNA3 / RDNA3.5): SQTT layout 3.
    Rdna3,
    /// gfx12 (RDNA4): SQTT layout 4.
    Rdna4,
    /// gfx9.4/9.5 (CDNA3, gfx942 / gfx950): the gfx9 SQTT packet set.
    Cdna,
}

/// A `gfxMMmS` target: major, minor and stepping as LLVM spells them (`gfx1100` = 11.0.0,
/// `gfx950` = 9.5.0, `gfx90a` = 9.0.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct GfxTarget {
    pub major: u32,
    pub minor: u32,
    pub stepping: u32,
}

impl GfxTarget {
    pub const GFX1100: GfxTarget = GfxTarget::new(11, 0, 0);
    pub const GFX1200: GfxTarget = GfxTarget::new(12, 0, 0);
    pub const GFX950: GfxTarget = GfxTarget::new(9, 5, 0);

    pub const fn new(major: u32, minor: u32, stepping: u32) -> Self {
        GfxTarget {
            major,
            minor,
            stepping,
        }
    }

    /// From KFD's `gfx_target_version` property (`110000` = gfx1100, `90500` = gfx950).
    pub fn from_target_version(v: u32) -> Self {
        GfxTarget::new(v / 10000, (v / 100) % 100, v % 100)
    }

    pub fn target_version(&self) -> u32 {
        self.major * 10000 + self.minor * 100 + self.stepping
    }

    pub fn family(&self) -> Option<Family> {
        match self.major {
            11 => Some(Family::Rdna3),
            12 => Some(Family::Rdna4),
            9 if self.minor >= 4 => Some(Family::Cdna),
            _ => None,
        }
    }
}

impl fmt::Display for GfxTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // LLVM writes minor and stepping as one hex digit each (gfx90a, gfx1151).
        write!(f, "gfx{}{:x}{:x}", self.major, self.minor, self.stepping)
    }
}

/// Error for a target name that is not `gfx` followed by a known version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown GPU target {0:?} (expected e.g. gfx1100, gfx1200, gfx950)")]
pub struct UnknownTarget(pub String);

impl FromStr for GfxTarget {
    type Err = UnknownTarget;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || UnknownTarget(s.to_string());
        let digits = s.strip_prefix("gfx").ok_or_else(err)?;
        // Strip feature suffixes such as ":sramecc+:xnack-".
        let digits = digits.split(':').next().unwrap_or("");
        if digits.len() < 3 || !digits.is_ascii() {
            return Err(err());
        }
        let (major, rest) = digits.split_at(digits.len() - 2);
        let major: u32 = major.parse().map_err(|_| err())?;
        let mut hex = rest.chars().map(|c| c.to_digit(16));
        let minor = hex.next().flatten().ok_or_else(err)?;
        let stepping = hex.next().flatten().ok_or_else(err)?;
        Ok(GfxTarget::new(major, minor, stepping))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_llvm_names() {
        assert_eq!("gfx1100".parse::<GfxTarget>().unwrap(), GfxTarget::GFX1100);
        assert_eq!("gfx950".parse::<GfxTarget>().unwrap(), GfxTarget::GFX950);
        assert_eq!(
            "gfx90a".parse::<GfxTarget>().unwrap(),
            GfxTarget::new(9, 0, 10)
        );
        assert_eq!(
            "gfx1151".parse::<GfxTarget>().unwrap().to_string(),
            "gfx1151"
        );
        assert_eq!(
            GfxTarget::from_target_version(120001).to_string(),
            "gfx1201"
        );
        assert!("gfx".parse::<GfxTarget>().is_err());
        assert!("sm_90".parse::<GfxTarget>().is_err());
        assert_eq!(GfxTarget::GFX950.family(), Some(Family::Cdna));
    }
}
