//! TGRID amounts as people write them: decimal tokens with up to 18 fractional digits.

use alloy::primitives::U256;

/// Decimals of TGRID.
pub const DECIMALS: usize = 18;

fn unit() -> U256 {
    U256::from(10u64).pow(U256::from(DECIMALS))
}

/// Formats wei as decimal tokens ("12.5").
pub fn format_tgrid(wei: U256) -> String {
    let (whole, frac) = (wei / unit(), wei % unit());
    if frac.is_zero() {
        return whole.to_string();
    }
    let digits = format!("{frac:0>width$}", width = DECIMALS);
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Parses decimal tokens ("12", "0.5") into wei; refuses signs, exponents, more than 18
/// fractional digits and amounts beyond 256 bits.
pub fn parse_tgrid(text: &str) -> Result<U256, String> {
    let bad = || format!("{text:?} is not a TGRID amount (decimal tokens such as 10 or 0.25)");
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(frac) || frac.len() > DECIMALS {
        return Err(bad());
    }
    let whole: U256 = whole.parse().map_err(|_| bad())?;
    let frac: U256 = if frac.is_empty() {
        U256::ZERO
    } else {
        format!("{frac:0<width$}", width = DECIMALS).parse().map_err(|_| bad())?
    };
    whole.checked_mul(unit()).and_then(|w| w.checked_add(frac)).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for s in ["0", "1", "12.5", "0.000000000000000001", "1000000"] {
            assert_eq!(format_tgrid(parse_tgrid(s).unwrap()), s);
        }
        assert_eq!(parse_tgrid("2.50").unwrap(), parse_tgrid("2.5").unwrap());
    }

    #[test]
    fn refuses_what_is_not_an_amount() {
        for s in ["", ".5", "-1", "1e18", "1.0000000000000000001", "abc", "1.2.3", " 1"] {
            assert!(parse_tgrid(s).is_err(), "{s:?}");
        }
        let huge = "9".repeat(80);
        assert!(parse_tgrid(&huge).is_err());
    }
}
