//! Constraint counts per gate (canonical openings), printed for the crate docs and bounded so
//! that a cost regression fails.

use super::*;

/// (id prefix, R1CS constraints at most).
const BUDGET: &[(&str, usize)] = &[
    ("NoopGate", 0),
    ("ConstantGate", 0),
    ("PublicInputGate", 0),
    ("ArithmeticGate", 180),
    ("ArithmeticExtensionGate", 210),
    ("MulExtensionGate", 195),
    ("BaseSumGate", 189),
    ("ReducingGate", 387),
    ("ReducingExtensionGate", 288),
    ("RandomAccessGate", 5_276),
    ("PoseidonMdsGate", 0),
    ("PoseidonGate", 73_951),
    ("CosetInterpolationGate", 4_149),
];

#[test]
fn constraint_counts() {
    let common = trivial_common();
    println!("| gate | plonky2 constraints | R1CS constraints | largest result bound (bits) |");
    for g in standard_gates(&common) {
        let id = g.0.id();
        let cs = new_cs();
        let (out, n) = r1cs(&cs, &g, &Opening::random(&g)).unwrap();
        let short: String = id.split(['(', '<']).next().unwrap_or(&id).trim().chars().take(90).collect();
        println!("| `{short}` | {} | {n} | {} |", out.len(), max_bits(&out));
        let budget = BUDGET.iter().find(|(p, _)| id.starts_with(p)).map(|b| b.1).unwrap();
        assert!(n <= budget, "{id}: {n} constraints, budget {budget}");
        assert!(max_bits(&out) <= tgrid_r1cs_goldilocks::MAX_BITS);
    }
}
