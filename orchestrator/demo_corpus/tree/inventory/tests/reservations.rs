use acme_inventory::{BinId, FewestBinsPolicy, FirstBinPolicy, InventoryError, Warehouse};

fn stocked(policy: Box<dyn acme_inventory::AllocationPolicy>) -> Warehouse {
    let mut warehouse = Warehouse::new(policy);
    warehouse.receive("MUG-01", BinId(1), 4).unwrap();
    warehouse.receive("MUG-01", BinId(2), 10).unwrap();
    warehouse
}

#[test]
fn a_reservation_holds_stock_until_released() {
    let mut warehouse = stocked(Box::new(FirstBinPolicy));
    let id = warehouse.reserve("MUG-01", 6).unwrap();
    assert_eq!(warehouse.available("MUG-01").unwrap(), 8);
    warehouse.release(id).unwrap();
    assert_eq!(warehouse.available("MUG-01").unwrap(), 14);
}

#[test]
fn shipping_removes_the_units() {
    let mut warehouse = stocked(Box::new(FewestBinsPolicy));
    let id = warehouse.reserve("MUG-01", 3).unwrap();
    assert_eq!(warehouse.ship(id).unwrap(), 3);
    assert_eq!(warehouse.available("MUG-01").unwrap(), 11);
}

#[test]
fn unknown_sku_is_an_error() {
    let mut warehouse = stocked(Box::new(FirstBinPolicy));
    let sku = acme_inventory::Sku::parse("HAT-01").unwrap();
    assert_eq!(warehouse.reserve("HAT-01", 1), Err(InventoryError::UnknownSku(sku)));
}

#[test]
fn too_few_units_is_refused() {
    let mut warehouse = stocked(Box::new(FirstBinPolicy));
    let err = warehouse.reserve("MUG-01", 20).unwrap_err();
    assert!(matches!(err, InventoryError::InsufficientStock { wanted: 20, available: 14, .. }));
}
