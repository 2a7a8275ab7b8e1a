use crate::stock::{BinId, StockLevel};

/// Decides which bins a request is served from. Returns (bin, units) pairs whose units sum to
/// at most `wanted`; the warehouse refuses the request if they sum to less.
pub trait AllocationPolicy {
    fn name(&self) -> &'static str;

    fn allocate(&self, levels: &mut [StockLevel], wanted: u32) -> Vec<(BinId, u32)>;
}

/// Serves from bins in bin order, draining each before the next.
pub struct FirstBinPolicy;

impl AllocationPolicy for FirstBinPolicy {
    fn name(&self) -> &'static str {
        "first-bin"
    }

    fn allocate(&self, levels: &mut [StockLevel], wanted: u32) -> Vec<(BinId, u32)> {
        levels.sort_by_key(|level| level.bin);
        take_in_order(levels, wanted)
    }
}

/// Serves from the fullest bins first, so that a request touches as few bins as possible.
pub struct FewestBinsPolicy;

impl AllocationPolicy for FewestBinsPolicy {
    fn name(&self) -> &'static str {
        "fewest-bins"
    }

    fn allocate(&self, levels: &mut [StockLevel], wanted: u32) -> Vec<(BinId, u32)> {
        levels.sort_by(|a, b| b.available().cmp(&a.available()).then(a.bin.cmp(&b.bin)));
        take_in_order(levels, wanted)
    }
}

fn take_in_order(levels: &mut [StockLevel], wanted: u32) -> Vec<(BinId, u32)> {
    let mut remaining = wanted;
    let mut picks = Vec::new();
    for level in levels.iter_mut() {
        if remaining == 0 {
            break;
        }
        let taken = level.take(remaining);
        if taken > 0 {
            picks.push((level.bin, taken));
            remaining -= taken;
        }
    }
    picks
}
