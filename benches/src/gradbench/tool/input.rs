//! Reading the evals' JSON inputs into flat vectors, and writing outputs back.
//!
//! Every accessor names the field it could not read, so a malformed input becomes an
//! error response that says what is wrong.

use serde_json::Value;

/// `min_runs` (default 1, at least 1) and `min_seconds` (default 0) of an input.
pub fn runs(input: &Value) -> (usize, f64) {
    let runs = input
        .get("min_runs")
        .and_then(Value::as_u64)
        .map_or(1, |r| r.max(1) as usize);
    let secs = input
        .get("min_seconds")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    (runs, secs)
}

/// The field `key` of an object.
pub fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key)
        .ok_or_else(|| format!("input has no field `{key}`"))
}

/// A number.
pub fn number(v: &Value, what: &str) -> Result<f64, String> {
    v.as_f64()
        .ok_or_else(|| format!("`{what}` must be a number, found {}", kind(v)))
}

/// A non-negative integer.
pub fn index(v: &Value, what: &str) -> Result<usize, String> {
    v.as_u64()
        .map(|u| u as usize)
        .ok_or_else(|| format!("`{what}` must be a non-negative integer, found {}", kind(v)))
}

/// An integer (possibly negative).
pub fn int(v: &Value, what: &str) -> Result<i64, String> {
    v.as_i64()
        .ok_or_else(|| format!("`{what}` must be an integer, found {}", kind(v)))
}

/// A list of values.
pub fn list<'a>(v: &'a Value, what: &str) -> Result<&'a [Value], String> {
    v.as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| format!("`{what}` must be a list, found {}", kind(v)))
}

/// A list of numbers.
pub fn numbers(v: &Value, what: &str) -> Result<Vec<f64>, String> {
    list(v, what)?
        .iter()
        .enumerate()
        .map(|(i, x)| number(x, &format!("{what}[{i}]")))
        .collect()
}

/// A list of non-negative integers.
pub fn indices(v: &Value, what: &str) -> Result<Vec<usize>, String> {
    list(v, what)?
        .iter()
        .enumerate()
        .map(|(i, x)| index(x, &format!("{what}[{i}]")))
        .collect()
}

/// A list of equally long lists of numbers, flattened row after row: `(rows, cols, data)`.
/// An empty list has `cols = 0`.
pub fn matrix(v: &Value, what: &str) -> Result<(usize, usize, Vec<f64>), String> {
    let rows = list(v, what)?;
    let mut data = Vec::new();
    let mut cols = None;
    for (i, row) in rows.iter().enumerate() {
        let row = numbers(row, &format!("{what}[{i}]"))?;
        match cols {
            None => cols = Some(row.len()),
            Some(c) if c != row.len() => {
                return Err(format!(
                    "`{what}` has rows of different lengths: row 0 has {c}, row {i} has {}",
                    row.len()
                ));
            }
            Some(_) => {}
        }
        data.extend(row);
    }
    Ok((rows.len(), cols.unwrap_or(0), data))
}

/// A matrix with exactly `cols` columns (row-major data and the row count).
pub fn matrix_with(v: &Value, what: &str, cols: usize) -> Result<(usize, Vec<f64>), String> {
    let (rows, c, data) = matrix(v, what)?;
    if rows > 0 && c != cols {
        return Err(format!("`{what}` must have {cols} columns, found {c}"));
    }
    Ok((rows, data))
}

/// A list of numbers as JSON.
pub fn to_list(x: &[f64]) -> Value {
    Value::Array(x.iter().map(|&v| finite(v)).collect())
}

/// Row-major data with `cols` columns as a list of rows.
pub fn to_rows(x: &[f64], cols: usize) -> Value {
    if cols == 0 {
        return Value::Array(Vec::new());
    }
    Value::Array(x.chunks(cols).map(to_list).collect())
}

/// A number as JSON (`null` for NaN and infinities, which JSON cannot write).
pub fn finite(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matrices_flatten_by_rows_and_check_lengths() {
        let (r, c, d) = matrix(&json!([[1, 2.5], [3, 4]]), "m").unwrap();
        assert_eq!((r, c, d), (2, 2, vec![1.0, 2.5, 3.0, 4.0]));
        let e = matrix(&json!([[1, 2], [3]]), "m").unwrap_err();
        assert!(e.contains("row 1 has 1"), "{e}");
        assert_eq!(matrix(&json!([]), "m").unwrap(), (0, 0, vec![]));
        assert!(matrix_with(&json!([[1, 2]]), "m", 3).is_err());
        assert!(numbers(&json!([1, "a"]), "x").unwrap_err().contains("x[1]"));
    }

    #[test]
    fn runs_default_and_clamp() {
        assert_eq!(runs(&json!({})), (1, 0.0));
        assert_eq!(runs(&json!({"min_runs": 0, "min_seconds": 0.5})), (1, 0.5));
        assert_eq!(runs(&json!(3.0)), (1, 0.0));
    }

    #[test]
    fn outputs_round_trip_and_non_finite_values_become_null() {
        assert_eq!(
            to_rows(&[1.0, 2.0, 3.0, 4.0], 2),
            json!([[1.0, 2.0], [3.0, 4.0]])
        );
        assert_eq!(to_list(&[f64::NAN, 0.5]), json!([null, 0.5]));
        let v = 0.1 + 0.2;
        let back: f64 = serde_json::from_str(&to_list(&[v]).to_string())
            .map(|x: Vec<f64>| x[0])
            .unwrap();
        assert_eq!(back, v);
    }
}
