//! The canonical binary encoding of a compiled model: the model section of a `.tgm` file and
//! the preimage of the model id.

use sha2::{Digest, Sha256};

use crate::codec::{Reader, Writer};
use crate::error::{Error, Result};
use crate::model::{
    Node, Op, Port, Ports, QParams, QuantModel, Requant, CIRCUIT_VERSION, MAX_CONCAT_INPUTS, MAX_LAYER_NORM_ROW,
    MAX_NAME_LEN, MAX_NODES, MAX_PORTS, MAX_RANK, MAX_TENSOR_LEN, TABLE_LEN,
};

impl QuantModel {
    /// The model id: SHA-256 over the canonical encoding (which includes [`CIRCUIT_VERSION`]).
    pub fn model_id(&self) -> [u8; 32] {
        Sha256::digest(self.to_canonical_bytes()).into()
    }

    /// Canonical binary encoding (the model section of a .tgm file and the model id preimage).
    pub fn to_canonical_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.u32(CIRCUIT_VERSION);
        w.str(&self.name);
        w.usizes(&self.input_shape);
        put_q(&mut w, self.input_q);
        w.u32(self.nodes.len() as u32);
        for n in &self.nodes {
            w.str(&n.name);
            w.usizes(&n.inputs);
            w.usizes(&n.shape);
            put_q(&mut w, n.q);
            match &n.op {
                Op::Dense { weights, bias, requant, relu } => {
                    w.u8(0);
                    put_affine(&mut w, weights, bias, requant, *relu);
                }
                Op::Conv { c_out, groups, kernel, stride, pads, weights, bias, requant, relu } => {
                    // A grouped convolution has its own tag, so that every model without one
                    // keeps its bytes (and its id).
                    if *groups == 1 {
                        w.u8(1);
                    } else {
                        w.u8(16);
                        w.u32(*groups as u32);
                    }
                    w.u32(*c_out as u32);
                    put_window(&mut w, kernel, stride, pads);
                    put_affine(&mut w, weights, bias, requant, *relu);
                }
                Op::MaxPool { kernel, stride, pads } => {
                    w.u8(2);
                    put_window(&mut w, kernel, stride, pads);
                }
                Op::AvgPool { kernel, stride, pads, requant, relu } => {
                    w.u8(3);
                    put_window(&mut w, kernel, stride, pads);
                    w.u32(requant.len() as u32);
                    requant.iter().for_each(|r| put_requant(&mut w, *r));
                    w.u8(*relu as u8);
                }
                Op::Add { ka, kb, requant, relu } => {
                    w.u8(4);
                    w.i32(*ka);
                    w.i32(*kb);
                    put_requant(&mut w, *requant);
                    w.u8(*relu as u8);
                }
                Op::Relu => w.u8(5),
                Op::Reshape => w.u8(6),
                Op::Gather { source } => {
                    w.u8(7);
                    w.u32(source.len() as u32);
                    source.iter().for_each(|&i| w.u32(i));
                }
                Op::Concat { source, constants } => {
                    w.u8(14);
                    w.u32(source.len() as u32);
                    source.iter().for_each(|&i| w.u32(i));
                    w.bytes(&constants.iter().map(|&v| v as u8).collect::<Vec<_>>());
                }
                Op::Table { table } => {
                    w.u8(8);
                    w.bytes(&table.iter().map(|&v| v as u8).collect::<Vec<_>>());
                }
                Op::MatMul { requant } => {
                    w.u8(10);
                    put_requant(&mut w, *requant);
                }
                Op::Div { requant } => {
                    w.u8(17);
                    put_requant(&mut w, *requant);
                }
                Op::LayerNorm { gamma, beta, eps, requant } => {
                    w.u8(12);
                    w.u32(gamma.len() as u32);
                    gamma.iter().for_each(|&g| w.i32(g));
                    w.u32(beta.len() as u32);
                    beta.iter().for_each(|&b| w.i64(b));
                    w.i64(*eps as i64);
                    put_requant(&mut w, *requant);
                }
                Op::Embedding { table, dim } => {
                    w.u8(13);
                    w.u32(*dim as u32);
                    w.bytes(&table.iter().map(|&v| v as u8).collect::<Vec<_>>());
                }
                Op::Softmax { exp, keep } => {
                    w.u8(11);
                    exp.iter().for_each(|&e| w.u16(e));
                    w.bytes(&keep.iter().map(|&k| u8::from(k)).collect::<Vec<_>>());
                }
                Op::ScoresSoftmax { requant, score_zero_point, exp_high, exp_low, keep } => {
                    w.u8(15);
                    put_requant(&mut w, *requant);
                    w.u16(*score_zero_point as u16);
                    exp_high.iter().chain(exp_low).for_each(|&e| w.u16(e));
                    w.bytes(&keep.iter().map(|&k| u8::from(k)).collect::<Vec<_>>());
                }
                Op::AddConst { ka, constants, requant } => {
                    w.u8(9);
                    w.i32(*ka);
                    w.u32(constants.len() as u32);
                    constants.iter().for_each(|&c| w.i32(c));
                    put_requant(&mut w, *requant);
                }
            }
        }
        // Only a model with several inputs or outputs has this section, so that every other
        // model keeps its bytes (and its id).
        if !self.ports.is_single() {
            w.u8(PORTS_TAG);
            for list in [&self.ports.inputs, &self.ports.outputs] {
                w.u32(list.len() as u32);
                for port in list {
                    w.str(&port.name);
                    w.usizes(&port.shape);
                }
            }
        }
        w.into_bytes()
    }

    /// Decodes and validates the canonical encoding. Never panics; lengths are checked against
    /// the remaining bytes before anything is allocated.
    pub fn from_canonical_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        let version = r.u32()?;
        if version != CIRCUIT_VERSION {
            return Err(Error::Format(format!(
                "model uses circuit version {version}, this build supports {CIRCUIT_VERSION}"
            )));
        }
        let name = r.str(MAX_NAME_LEN)?;
        let input_shape = r.usizes(MAX_RANK)?;
        let input_q = get_q(&mut r)?;
        let count = r.len_prefix(MAX_NODES, 16)?;
        let mut nodes = Vec::with_capacity(count);
        for _ in 0..count {
            let name = r.str(MAX_NAME_LEN)?;
            let inputs = r.usizes(MAX_CONCAT_INPUTS)?;
            let shape = r.usizes(MAX_RANK)?;
            let q = get_q(&mut r)?;
            let op = match r.u8()? {
                0 => {
                    let (weights, bias, requant, relu) = get_affine(&mut r)?;
                    Op::Dense { weights, bias, requant, relu }
                }
                tag @ (1 | 16) => {
                    let groups = if tag == 16 { r.u32()? as usize } else { 1 };
                    let c_out = r.u32()? as usize;
                    let (kernel, stride, pads) = get_window(&mut r)?;
                    let (weights, bias, requant, relu) = get_affine(&mut r)?;
                    Op::Conv { c_out, groups, kernel, stride, pads, weights, bias, requant, relu }
                }
                2 => {
                    let (kernel, stride, pads) = get_window(&mut r)?;
                    Op::MaxPool { kernel, stride, pads }
                }
                3 => {
                    let (kernel, stride, pads) = get_window(&mut r)?;
                    let n = r.len_prefix(1 << 16, 5)?;
                    let requant = (0..n).map(|_| get_requant(&mut r)).collect::<Result<_>>()?;
                    let relu = r.bool()?;
                    Op::AvgPool { kernel, stride, pads, requant, relu }
                }
                4 => {
                    let ka = r.i32()?;
                    let kb = r.i32()?;
                    let requant = get_requant(&mut r)?;
                    let relu = r.bool()?;
                    Op::Add { ka, kb, requant, relu }
                }
                5 => Op::Relu,
                6 => Op::Reshape,
                7 => {
                    let n = r.len_prefix(MAX_TENSOR_LEN, 4)?;
                    Op::Gather { source: (0..n).map(|_| r.u32()).collect::<Result<_>>()? }
                }
                14 => {
                    let n = r.len_prefix(MAX_TENSOR_LEN, 4)?;
                    let source = (0..n).map(|_| r.u32()).collect::<Result<_>>()?;
                    let constants = r.bytes(MAX_TENSOR_LEN)?.iter().map(|&b| b as i8).collect();
                    Op::Concat { source, constants }
                }
                8 => Op::Table { table: r.bytes(TABLE_LEN)?.iter().map(|&b| b as i8).collect() },
                9 => {
                    let ka = r.i32()?;
                    let n = r.len_prefix(MAX_TENSOR_LEN, 4)?;
                    let constants = (0..n).map(|_| r.i32()).collect::<Result<_>>()?;
                    Op::AddConst { ka, constants, requant: get_requant(&mut r)? }
                }
                10 => Op::MatMul { requant: get_requant(&mut r)? },
                17 => Op::Div { requant: get_requant(&mut r)? },
                11 => {
                    let exp = (0..TABLE_LEN).map(|_| r.u16()).collect::<Result<_>>()?;
                    Op::Softmax { exp, keep: get_mask(&mut r)? }
                }
                15 => {
                    let requant = get_requant(&mut r)?;
                    let score_zero_point = r.u16()? as i16;
                    let exp_high = (0..TABLE_LEN).map(|_| r.u16()).collect::<Result<_>>()?;
                    let exp_low = (0..TABLE_LEN).map(|_| r.u16()).collect::<Result<_>>()?;
                    Op::ScoresSoftmax { requant, score_zero_point, exp_high, exp_low, keep: get_mask(&mut r)? }
                }
                13 => {
                    let dim = r.u32()? as usize;
                    let table = r.bytes(1 << 16)?.iter().map(|&b| b as i8).collect();
                    Op::Embedding { table, dim }
                }
                12 => {
                    let n = r.len_prefix(MAX_LAYER_NORM_ROW, 4)?;
                    let gamma = (0..n).map(|_| r.i32()).collect::<Result<_>>()?;
                    let n = r.len_prefix(MAX_LAYER_NORM_ROW, 8)?;
                    let beta = (0..n).map(|_| r.i64()).collect::<Result<_>>()?;
                    let eps = r.i64()? as u64;
                    Op::LayerNorm { gamma, beta, eps, requant: get_requant(&mut r)? }
                }
                tag => return Err(Error::Format(format!("unknown op tag {tag}"))),
            };
            nodes.push(Node { name, op, inputs, shape, q });
        }
        let mut ports = Ports::default();
        if r.remaining() > 0 {
            match r.u8()? {
                PORTS_TAG => {
                    for list in [&mut ports.inputs, &mut ports.outputs] {
                        let count = r.len_prefix(MAX_PORTS, 8)?;
                        for _ in 0..count {
                            list.push(Port { name: r.str(MAX_NAME_LEN)?, shape: r.usizes(MAX_RANK)? });
                        }
                    }
                    if ports.is_single() {
                        return Err(Error::Format("an empty ports section".into()));
                    }
                }
                tag => return Err(Error::Format(format!("unknown model section tag {tag}"))),
            }
        }
        r.finish()?;
        let model = QuantModel { name, input_shape, input_q, nodes, ports };
        model.validate()?;
        Ok(model)
    }
}

/// Tag of the optional section after the nodes that names a model's several inputs and outputs.
const PORTS_TAG: u8 = 1;

fn put_q(w: &mut Writer, q: QParams) {
    w.u32(q.scale.to_bits());
    w.u8(q.zero_point as u8);
}

fn get_q(r: &mut Reader<'_>) -> Result<QParams> {
    Ok(QParams { scale: f32::from_bits(r.u32()?), zero_point: r.u8()? as i8 })
}

fn put_requant(w: &mut Writer, q: Requant) {
    w.u32(q.multiplier);
    w.u8(q.shift);
}

fn get_requant(r: &mut Reader<'_>) -> Result<Requant> {
    Ok(Requant { multiplier: r.u32()?, shift: r.u8()? })
}

/// A Softmax mask: one byte per cell, 0 or 1.
fn get_mask(r: &mut Reader<'_>) -> Result<Vec<bool>> {
    r.bytes(MAX_TENSOR_LEN)?
        .iter()
        .map(|&b| match b {
            0 | 1 => Ok(b == 1),
            _ => Err(Error::Format(format!("mask byte {b} is not 0 or 1"))),
        })
        .collect()
}

fn put_window(w: &mut Writer, kernel: &[usize; 2], stride: &[usize; 2], pads: &[usize; 4]) {
    kernel.iter().chain(stride).chain(pads).for_each(|&v| w.u32(v as u32));
}

type Window = ([usize; 2], [usize; 2], [usize; 4]);

fn get_window(r: &mut Reader<'_>) -> Result<Window> {
    let mut v = [0usize; 8];
    for x in v.iter_mut() {
        *x = r.u32()? as usize;
    }
    Ok(([v[0], v[1]], [v[2], v[3]], [v[4], v[5], v[6], v[7]]))
}

fn put_affine(w: &mut Writer, weights: &[i8], bias: &[i32], requant: &[Requant], relu: bool) {
    w.bytes(&weights.iter().map(|&v| v as u8).collect::<Vec<_>>());
    w.u32(bias.len() as u32);
    bias.iter().for_each(|&b| w.i32(b));
    w.u32(requant.len() as u32);
    requant.iter().for_each(|&q| put_requant(w, q));
    w.u8(relu as u8);
}

type Affine = (Vec<i8>, Vec<i32>, Vec<Requant>, bool);

fn get_affine(r: &mut Reader<'_>) -> Result<Affine> {
    let weights = r.bytes(MAX_TENSOR_LEN)?.iter().map(|&b| b as i8).collect();
    let n = r.len_prefix(MAX_TENSOR_LEN, 4)?;
    let bias = (0..n).map(|_| r.i32()).collect::<Result<_>>()?;
    let n = r.len_prefix(MAX_TENSOR_LEN, 5)?;
    let requant = (0..n).map(|_| get_requant(r)).collect::<Result<_>>()?;
    let relu = r.bool()?;
    Ok((weights, bias, requant, relu))
}
