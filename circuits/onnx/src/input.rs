//! Input and calibration data in EZKL's JSON format, read as flat float samples.

use std::path::Path;

use tgrid_int8::{numel, Port};

use crate::{Error, Result};

/// Input data in EZKL's format: `{"input_data": [[f32 values], ...]}`. For a one-input model
/// every inner array is one sample (EZKL's batch convention for calibration files). For a model
/// with several inputs, EZKL's form has one inner array per input (each holding one or more
/// samples of that input back to back); one array per sample with the inputs laid end to end
/// is read too ([`InputData::samples_for_ports`]). A sample may
/// be nested as its tensor's shape (`[[[0.1, 0.2], ...]]`, as exporters write it) and its values
/// integers: it is read flat, in row-major order.
#[derive(Clone, Debug, serde::Serialize)]
pub struct InputData {
    /// Flat float samples.
    pub input_data: Vec<Vec<f32>>,
}

/// Deepest nesting of a sample's lists (a rank-8 tensor, the int8 model's largest, plus one).
const MAX_SAMPLE_DEPTH: usize = 9;

impl<'de> serde::Deserialize<'de> for InputData {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Raw {
            input_data: Vec<serde_json::Value>,
        }
        let raw = Raw::deserialize(deserializer)?;
        let input_data = raw
            .input_data
            .iter()
            .enumerate()
            .map(|(i, sample)| {
                let mut flat = Vec::new();
                flatten_sample(sample, 0, &mut flat)
                    .map_err(|e| serde::de::Error::custom(format!("sample {i}: {e}")))?;
                Ok(flat)
            })
            .collect::<std::result::Result<_, D::Error>>()?;
        Ok(InputData { input_data })
    }
}

/// Appends the numbers of `value` (a number, or lists of them nested at most
/// [`MAX_SAMPLE_DEPTH`] deep) to `out` in order.
fn flatten_sample(value: &serde_json::Value, depth: usize, out: &mut Vec<f32>) -> std::result::Result<(), String> {
    match value {
        serde_json::Value::Number(n) if depth > 0 => {
            let v = n.as_f64().ok_or_else(|| format!("{n} is not a number"))? as f32;
            if out.len() >= tgrid_int8::MAX_TENSOR_LEN {
                return Err(format!("more than {} values", tgrid_int8::MAX_TENSOR_LEN));
            }
            out.push(v);
            Ok(())
        }
        serde_json::Value::Array(items) if depth < MAX_SAMPLE_DEPTH => {
            items.iter().try_for_each(|item| flatten_sample(item, depth + 1, out))
        }
        serde_json::Value::Array(_) => Err(format!("lists nested deeper than {MAX_SAMPLE_DEPTH}")),
        other => Err(format!("expected a list of numbers, found {other}")),
    }
}

impl InputData {
    /// Reads and checks an EZKL-format JSON file: at least one sample, every value finite.
    pub fn from_path(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Data(format!("{}: {e}", path.display())))?;
        Self::from_json(&text).map_err(|e| Error::Data(format!("{}: {e}", path.display())))
    }

    /// Parses EZKL-format JSON.
    pub fn from_json(text: &str) -> std::result::Result<Self, String> {
        // serde_json maps NaN/Infinity literals to errors already; numbers out of f32 range
        // become infinities, which we reject below.
        let data: InputData = serde_json::from_str(text).map_err(|e| format!("not EZKL input JSON: {e}"))?;
        if data.input_data.is_empty() || data.input_data.iter().any(|s| s.is_empty()) {
            return Err("input_data must hold at least one non-empty sample".into());
        }
        for (i, s) in data.input_data.iter().enumerate() {
            if let Some(j) = s.iter().position(|v| !v.is_finite()) {
                return Err(format!("sample {i} value {j} is not finite"));
            }
        }
        Ok(data)
    }

    /// The samples of a model taking `input_len` values: a sample that holds several inputs back
    /// to back (a whole multiple of `input_len` values, as EZKL's own calibration files often do)
    /// is split into them, and a note says so; any other length is an error naming the sample.
    pub fn samples_for(&self, input_len: usize) -> Result<(Vec<Vec<f32>>, Option<String>)> {
        let mut samples = Vec::new();
        let mut split = 0usize;
        for (i, sample) in self.input_data.iter().enumerate() {
            if input_len == 0 || sample.len() % input_len != 0 {
                return Err(Error::Data(format!(
                    "sample {i} has {} values, the model takes {input_len} (or a multiple, for inputs back to back)",
                    sample.len()
                )));
            }
            if sample.len() > input_len {
                split += 1;
            }
            samples.extend(sample.chunks(input_len).map(<[f32]>::to_vec));
        }
        let note = (split > 0).then(|| {
            format!(
                "{split} sample(s) held several inputs of {input_len} values back to back: read as {} samples",
                samples.len()
            )
        });
        Ok((samples, note))
    }

    /// The samples of a model taking `input_len` values made of `ports` (its several inputs, or
    /// none): EZKL's form, one array per input with the same number of samples in each, is
    /// zipped into samples with the inputs laid end to end; anything else is read as
    /// [`InputData::samples_for`] reads it.
    pub fn samples_for_ports(&self, input_len: usize, ports: &[Port]) -> Result<(Vec<Vec<f32>>, Option<String>)> {
        let lens: Vec<usize> = ports.iter().map(|p| numel(&p.shape)).collect();
        let per_input =
            |(data, &len): (&Vec<f32>, &usize)| (len > 0 && data.len() % len == 0).then(|| data.len() / len);
        let counts: Option<Vec<usize>> = self.input_data.iter().zip(&lens).map(per_input).collect();
        let Some(counts) = counts.filter(|c| ports.len() >= 2 && self.input_data.len() == ports.len() && !c.is_empty())
        else {
            return self.samples_for(input_len);
        };
        if counts.iter().any(|&c| c != counts[0]) {
            let names: Vec<String> =
                ports.iter().zip(&counts).map(|(p, c)| format!("'{}': {c} sample(s)", p.name)).collect();
            return Err(Error::Data(format!(
                "one array per input, but they hold different numbers of samples ({})",
                names.join(", ")
            )));
        }
        let samples: Vec<Vec<f32>> = (0..counts[0])
            .map(|k| {
                self.input_data
                    .iter()
                    .zip(&lens)
                    .flat_map(|(data, &len)| data[k * len..(k + 1) * len].iter().copied())
                    .collect()
            })
            .collect();
        // EZKL's own form for several inputs: nothing to note.
        Ok((samples, None))
    }

    /// The one input a task proves: the first sample of a file read as
    /// [`InputData::samples_for_ports`] reads it.
    pub fn first_sample(&self, input_len: usize, ports: &[Port]) -> Result<Vec<f32>> {
        let (samples, _) = self.samples_for_ports(input_len, ports)?;
        samples.into_iter().next().ok_or_else(|| Error::Data("the input file holds no sample".into()))
    }
}

/// A model's several outputs, cut out of its flat real output in their order, as JSON
/// (`[{"name", "shape", "output"}]`); `None` for a model with one output.
pub fn named_outputs_json(model: &tgrid_int8::QuantModel, real: &[f32]) -> Option<serde_json::Value> {
    let ports = &model.ports.outputs;
    if ports.is_empty() {
        return None;
    }
    let mut rest = real;
    let parts: Vec<serde_json::Value> = ports
        .iter()
        .map(|port| {
            let (part, after) = rest.split_at(numel(&port.shape).min(rest.len()));
            rest = after;
            serde_json::json!({ "name": port.name, "shape": port.shape, "output": part })
        })
        .collect();
    Some(serde_json::Value::Array(parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_samples_and_integers_are_read_flat_in_row_major_order() {
        let data = InputData::from_json(r#"{"input_data": [[[1, 2], [3, 4.5]], [5, 6, 7, 8]]}"#).unwrap();
        assert_eq!(data.input_data, vec![vec![1.0, 2.0, 3.0, 4.5], vec![5.0, 6.0, 7.0, 8.0]]);
    }

    #[test]
    fn malformed_samples_are_refused_with_their_index() {
        for (text, why) in [
            (r#"{"input_data": [1.0, 2.0]}"#, "sample 0: expected a list of numbers"),
            (r#"{"input_data": [[1.0], ["a"]]}"#, "sample 1: expected a list of numbers"),
            (r#"{"input_data": [[[[[[[[[[[1.0]]]]]]]]]]]}"#, "nested deeper"),
            (r#"{"input_data": [[]]}"#, "non-empty"),
        ] {
            let err = InputData::from_json(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn inputs_back_to_back_are_split_into_samples_with_a_note() {
        let data = InputData { input_data: vec![vec![1.0, 2.0], vec![3.0, 4.0, 5.0, 6.0, 7.0, 8.0]] };
        let (samples, note) = data.samples_for(2).unwrap();
        assert_eq!(samples, vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 6.0], vec![7.0, 8.0]]);
        assert!(note.unwrap().contains("1 sample(s) held several inputs of 2 values"));
        assert_eq!(data.samples_for(1).unwrap().0.len(), 8);
        let err = data.samples_for(4).unwrap_err().to_string();
        assert!(err.contains("sample 0 has 2 values, the model takes 4"), "{err}");
        let exact = InputData { input_data: vec![vec![1.0, 2.0]] };
        assert_eq!(exact.samples_for(2).unwrap(), (vec![vec![1.0, 2.0]], None));
    }

    #[test]
    fn one_array_per_input_is_zipped_into_samples() {
        let ports = [Port { name: "a".into(), shape: vec![2] }, Port { name: "b".into(), shape: vec![1] }];
        // EZKL's form: two samples of `a`, then two of `b`.
        let data = InputData { input_data: vec![vec![1.0, 2.0, 3.0, 4.0], vec![5.0, 6.0]] };
        let (samples, note) = data.samples_for_ports(3, &ports).unwrap();
        assert_eq!(samples, vec![vec![1.0, 2.0, 5.0], vec![3.0, 4.0, 6.0]]);
        assert_eq!(note, None);
        assert_eq!(data.first_sample(3, &ports).unwrap(), vec![1.0, 2.0, 5.0]);
        // Inputs laid end to end, one array per sample.
        let laid = InputData { input_data: vec![vec![1.0, 2.0, 5.0], vec![3.0, 4.0, 6.0]] };
        assert_eq!(laid.samples_for_ports(3, &ports).unwrap().0, samples);
        let uneven = InputData { input_data: vec![vec![1.0, 2.0, 3.0, 4.0], vec![5.0]] };
        let err = uneven.samples_for_ports(3, &ports).unwrap_err().to_string();
        assert!(err.contains("'a': 2 sample(s), 'b': 1 sample(s)"), "{err}");
        let wrong = InputData { input_data: vec![vec![1.0; 5]] };
        assert!(wrong.first_sample(3, &ports).unwrap_err().to_string().contains("sample 0 has 5 values"));
    }
}
