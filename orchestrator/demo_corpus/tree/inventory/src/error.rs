use std::fmt;

use crate::reservation::ReservationId;
use crate::sku::Sku;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InventoryError {
    InvalidSku(String),
    UnknownSku(Sku),
    InsufficientStock { sku: Sku, wanted: u32, available: u32 },
    UnknownReservation(ReservationId),
}

impl fmt::Display for InventoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InventoryError::InvalidSku(raw) => write!(f, "invalid sku {raw:?}"),
            InventoryError::UnknownSku(sku) => write!(f, "unknown sku {sku}"),
            InventoryError::InsufficientStock { sku, wanted, available } => {
                write!(f, "{sku}: wanted {wanted}, only {available} available")
            }
            InventoryError::UnknownReservation(id) => write!(f, "unknown reservation {id}"),
        }
    }
}

impl std::error::Error for InventoryError {}
