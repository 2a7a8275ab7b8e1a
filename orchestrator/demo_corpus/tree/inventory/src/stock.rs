use std::fmt;

/// A storage location inside the warehouse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BinId(pub u16);

impl fmt::Display for BinId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bin-{}", self.0)
    }
}

/// Units of one SKU in one bin: what is on the shelf and how much of it is spoken for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StockLevel {
    pub bin: BinId,
    on_hand: u32,
    reserved: u32,
}

impl StockLevel {
    pub fn new(bin: BinId, on_hand: u32) -> StockLevel {
        StockLevel { bin, on_hand, reserved: 0 }
    }

    pub fn available(&self) -> u32 {
        self.on_hand - self.reserved
    }

    /// Reserves up to `wanted` units and returns how many were taken.
    pub fn take(&mut self, wanted: u32) -> u32 {
        let taken = wanted.min(self.available());
        self.reserved += taken;
        taken
    }

    /// Returns reserved units to the shelf.
    pub fn put_back(&mut self, units: u32) {
        self.reserved -= units.min(self.reserved);
    }

    /// Removes reserved units from the shelf when they ship.
    pub fn ship(&mut self, units: u32) {
        let units = units.min(self.reserved);
        self.reserved -= units;
        self.on_hand -= units;
    }

    pub fn receive(&mut self, units: u32) {
        self.on_hand += units;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_never_exceeds_what_is_available() {
        let mut level = StockLevel::new(BinId(1), 5);
        assert_eq!(level.take(8), 5);
        assert_eq!(level.available(), 0);
    }

    #[test]
    fn shipping_reduces_on_hand() {
        let mut level = StockLevel::new(BinId(1), 5);
        level.take(2);
        level.ship(2);
        assert_eq!(level.available(), 3);
    }
}
