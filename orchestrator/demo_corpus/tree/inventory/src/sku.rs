use std::fmt;

use crate::error::InventoryError;

/// A stock-keeping unit: upper-case letters, digits and dashes, 3 to 16 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sku(String);

impl Sku {
    pub fn parse(raw: &str) -> Result<Sku, InventoryError> {
        let valid_len = (3..=16).contains(&raw.len());
        let valid_chars = raw
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-');
        if valid_len && valid_chars {
            Ok(Sku(raw.to_owned()))
        } else {
            Err(InventoryError::InvalidSku(raw.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Sku {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_upper_case_digits_and_dashes() {
        assert_eq!(Sku::parse("MUG-01").unwrap().as_str(), "MUG-01");
    }

    #[test]
    fn rejects_lower_case_and_short_codes() {
        assert!(Sku::parse("mug-01").is_err());
        assert!(Sku::parse("AB").is_err());
    }
}
