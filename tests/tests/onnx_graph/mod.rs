//! ONNX models written in a test, a line per node instead of protobuf boilerplate.

use prost::Message;
use tract_onnx::pb;

/// A float graph under construction: one input named `input` and one output named `output`,
/// and any more inputs and outputs added by name.
pub struct OnnxGraph {
    nodes: Vec<pb::NodeProto>,
    initializers: Vec<pb::TensorProto>,
    input: Vec<i64>,
    output: Vec<i64>,
    more_inputs: Vec<pb::ValueInfoProto>,
    more_outputs: Vec<pb::ValueInfoProto>,
    opset: i64,
}

/// An integer attribute of a node.
pub fn int_attr(name: &str, value: i64) -> pb::AttributeProto {
    pb::AttributeProto {
        name: name.into(),
        r#type: pb::attribute_proto::AttributeType::Int as i32,
        i: value,
        ..Default::default()
    }
}

/// An attribute of a node holding a list of integers.
pub fn ints_attr(name: &str, values: &[i64]) -> pb::AttributeProto {
    pb::AttributeProto {
        name: name.into(),
        r#type: pb::attribute_proto::AttributeType::Ints as i32,
        ints: values.to_vec(),
        ..Default::default()
    }
}

/// A string attribute of a node.
pub fn string_attr(name: &str, value: &str) -> pb::AttributeProto {
    pb::AttributeProto {
        name: name.into(),
        r#type: pb::attribute_proto::AttributeType::String as i32,
        s: value.as_bytes().to_vec(),
        ..Default::default()
    }
}

/// A float attribute of a node.
pub fn float_attr(name: &str, value: f32) -> pb::AttributeProto {
    pb::AttributeProto {
        name: name.into(),
        r#type: pb::attribute_proto::AttributeType::Float as i32,
        f: value,
        ..Default::default()
    }
}

fn tensor(name: &str, dims: &[i64]) -> pb::TensorProto {
    pb::TensorProto { name: name.into(), dims: dims.to_vec(), ..Default::default() }
}

fn value_info(name: &str, dims: &[i64]) -> pb::ValueInfoProto {
    typed_value_info(name, dims, 1)
}

/// A graph input or output of ONNX element type `elem_type` (1 float, 7 int64).
fn typed_value_info(name: &str, dims: &[i64], elem_type: i32) -> pb::ValueInfoProto {
    use pb::tensor_shape_proto::{dimension::Value as Dim, Dimension};
    let shape = pb::TensorShapeProto {
        dim: dims.iter().map(|&d| Dimension { value: Some(Dim::DimValue(d)), ..Default::default() }).collect(),
    };
    pb::ValueInfoProto {
        name: name.into(),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor { elem_type, shape: Some(shape) })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

impl OnnxGraph {
    /// A graph from tensor `input` to tensor `output` of the given ONNX shapes (batch included).
    pub fn new(input: &[i64], output: &[i64]) -> Self {
        Self {
            nodes: Vec::new(),
            initializers: Vec::new(),
            input: input.to_vec(),
            output: output.to_vec(),
            more_inputs: Vec::new(),
            more_outputs: Vec::new(),
            opset: 17,
        }
    }

    /// One more graph input, after `input`, of ONNX element type `elem_type` (1 float, 7 int64).
    pub fn input(&mut self, name: &str, dims: &[i64], elem_type: i32) -> &mut Self {
        self.more_inputs.push(typed_value_info(name, dims, elem_type));
        self
    }

    /// One more float graph output, after `output`.
    pub fn output(&mut self, name: &str, dims: &[i64]) -> &mut Self {
        self.more_outputs.push(value_info(name, dims));
        self
    }

    /// The version of the default operator set the model imports (17 unless set).
    pub fn opset(&mut self, version: i64) -> &mut Self {
        self.opset = version;
        self
    }

    /// A float initializer.
    pub fn floats(&mut self, name: &str, dims: &[i64], values: Vec<f32>) -> &mut Self {
        self.initializer(pb::TensorProto { data_type: 1, float_data: values, ..tensor(name, dims) })
    }

    /// An int64 initializer (shapes, indices).
    pub fn ints(&mut self, name: &str, dims: &[i64], values: Vec<i64>) -> &mut Self {
        self.initializer(pb::TensorProto { data_type: 7, int64_data: values, ..tensor(name, dims) })
    }

    fn initializer(&mut self, t: pb::TensorProto) -> &mut Self {
        self.initializers.push(t);
        self
    }

    /// A node `output = op(inputs)` with attributes.
    pub fn node(&mut self, op: &str, inputs: &[&str], output: &str, attrs: Vec<pb::AttributeProto>) -> &mut Self {
        self.nodes.push(pb::NodeProto {
            op_type: op.into(),
            name: format!("{op}_{}", self.nodes.len()),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![output.into()],
            attribute: attrs,
            ..Default::default()
        });
        self
    }

    /// Replaces (or adds) attribute `attr.name` of the node named `node`.
    pub fn replace_attr(&mut self, node: &str, attr: pb::AttributeProto) -> &mut Self {
        let n = self.nodes.iter_mut().find(|n| n.name == node).expect("a node of that name");
        n.attribute.retain(|a| a.name != attr.name);
        n.attribute.push(attr);
        self
    }

    /// Writes the model to `path`.
    pub fn write(&self, path: &std::path::Path) {
        let graph = pb::GraphProto {
            name: path.file_stem().unwrap().to_string_lossy().into_owned(),
            node: self.nodes.clone(),
            initializer: self.initializers.clone(),
            input: [value_info("input", &self.input)].into_iter().chain(self.more_inputs.clone()).collect(),
            output: [value_info("output", &self.output)].into_iter().chain(self.more_outputs.clone()).collect(),
            ..Default::default()
        };
        let model = pb::ModelProto {
            ir_version: 8,
            opset_import: vec![pb::OperatorSetIdProto { domain: String::new(), version: self.opset }],
            graph: Some(graph),
            ..Default::default()
        };
        std::fs::write(path, model.encode_to_vec()).unwrap();
    }
}

/// `n` deterministic pseudo-random values in `[-scale, scale)`.
pub fn values(seed: u64, n: usize, scale: f32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}
