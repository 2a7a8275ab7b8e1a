use std::collections::BTreeMap;

use crate::error::InventoryError;
use crate::policy::AllocationPolicy;
use crate::reservation::{Reservation, ReservationId};
use crate::sku::Sku;
use crate::stock::{BinId, StockLevel};

/// All stock, by SKU, and the reservations currently holding part of it.
pub struct Warehouse {
    policy: Box<dyn AllocationPolicy>,
    stock: BTreeMap<Sku, Vec<StockLevel>>,
    reservations: BTreeMap<ReservationId, Reservation>,
    next_id: u64,
}

impl Warehouse {
    pub fn new(policy: Box<dyn AllocationPolicy>) -> Warehouse {
        Warehouse { policy, stock: BTreeMap::new(), reservations: BTreeMap::new(), next_id: 1 }
    }

    pub fn receive(&mut self, sku: &str, bin: BinId, units: u32) -> Result<(), InventoryError> {
        let sku = Sku::parse(sku)?;
        let levels = self.stock.entry(sku).or_default();
        match levels.iter_mut().find(|level| level.bin == bin) {
            Some(level) => level.receive(units),
            None => levels.push(StockLevel::new(bin, units)),
        }
        Ok(())
    }

    pub fn available(&self, sku: &str) -> Result<u32, InventoryError> {
        let sku = Sku::parse(sku)?;
        Ok(self.stock.get(&sku).map_or(0, |levels| levels.iter().map(StockLevel::available).sum()))
    }

    /// Holds `units` of `sku` for an order, all or nothing.
    pub fn reserve(&mut self, sku: &str, units: u32) -> Result<ReservationId, InventoryError> {
        let sku = Sku::parse(sku)?;
        let levels = self
            .stock
            .get_mut(&sku)
            .ok_or_else(|| InventoryError::UnknownSku(sku.clone()))?;
        let picks = self.policy.allocate(levels, units);
        let taken: u32 = picks.iter().map(|(_, units)| units).sum();
        if taken < units {
            return Err(InventoryError::InsufficientStock { sku, wanted: units, available: taken });
        }
        let id = ReservationId(self.next_id);
        self.next_id += 1;
        self.reservations.insert(id, Reservation::new(id, sku, picks));
        Ok(id)
    }

    /// Gives a reservation's units back to their bins, as when an order is cancelled.
    pub fn release(&mut self, id: ReservationId) -> Result<(), InventoryError> {
        let reservation = self
            .reservations
            .remove(&id)
            .ok_or(InventoryError::UnknownReservation(id))?;
        self.for_each_pick(&reservation, StockLevel::put_back);
        Ok(())
    }

    /// Takes a reservation's units off the shelves, as when an order ships.
    pub fn ship(&mut self, id: ReservationId) -> Result<u32, InventoryError> {
        let reservation = self
            .reservations
            .remove(&id)
            .ok_or(InventoryError::UnknownReservation(id))?;
        self.for_each_pick(&reservation, StockLevel::ship);
        Ok(reservation.units())
    }

    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }

    fn for_each_pick(&mut self, reservation: &Reservation, apply: fn(&mut StockLevel, u32)) {
        if let Some(levels) = self.stock.get_mut(&reservation.sku) {
            for (bin, units) in &reservation.picks {
                if let Some(level) = levels.iter_mut().find(|level| level.bin == *bin) {
                    apply(level, *units);
                }
            }
        }
    }
}
