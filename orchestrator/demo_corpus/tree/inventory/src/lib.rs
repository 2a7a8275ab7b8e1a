//! Stock levels per SKU and bin, allocation across bins, and reservations that hold stock
//! for an order until it ships or is cancelled.

pub mod error;
pub mod policy;
pub mod reservation;
pub mod sku;
pub mod stock;
pub mod warehouse;

pub use error::InventoryError;
pub use policy::{AllocationPolicy, FewestBinsPolicy, FirstBinPolicy};
pub use reservation::{Reservation, ReservationId};
pub use sku::Sku;
pub use stock::{BinId, StockLevel};
pub use warehouse::Warehouse;
