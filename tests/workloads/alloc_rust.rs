// SPDX-License-Identifier: MIT
// Rust allocations through the __rust_alloc shims (System allocator, which calls malloc):
//
//   rust_boxes   10 x 500 = 5000 live (leaked boxes)
//   rust_vec     1 x 3000 live (forgotten Vec)
//   rust_churn   100 x 64 allocated and dropped
use std::hint::black_box;

#[inline(never)]
fn rust_boxes() {
    for _ in 0..10 {
        let b: Box<[u8; 500]> = black_box(Box::new([7u8; 500]));
        Box::leak(b);
    }
}

#[inline(never)]
fn rust_vec() {
    let v: Vec<u8> = black_box(Vec::with_capacity(3000));
    std::mem::forget(v);
}

#[inline(never)]
fn rust_churn() {
    for _ in 0..100 {
        let v: Vec<u8> = black_box(Vec::with_capacity(64));
        drop(v);
    }
}

fn main() {
    rust_boxes();
    rust_vec();
    rust_churn();
}
