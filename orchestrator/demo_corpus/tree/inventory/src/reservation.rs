use std::fmt;

use crate::sku::Sku;
use crate::stock::BinId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReservationId(pub u64);

impl fmt::Display for ReservationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r-{}", self.0)
    }
}

/// Units of one SKU held for an order, and the bins they are held in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub id: ReservationId,
    pub sku: Sku,
    pub picks: Vec<(BinId, u32)>,
}

impl Reservation {
    pub fn new(id: ReservationId, sku: Sku, picks: Vec<(BinId, u32)>) -> Reservation {
        Reservation { id, sku, picks }
    }

    pub fn units(&self) -> u32 {
        self.picks.iter().map(|(_, units)| units).sum()
    }
}
