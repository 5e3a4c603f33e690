//! What one record may cost in a UTC day: a workspace's cap per unit, and
//! the question a fire past it asks ("spend more?") instead of going out.

use serde::{Deserialize, Serialize};

use crate::spend::Amount;

/// A workspace's cap on what each record's fires may cost in a UTC day,
/// in one unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RecordCap {
    pub unit: String,
    pub daily_limit: Amount,
}

/// A record cap as set, with who set it and when (Unix ms).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecordCapStatus {
    #[serde(flatten)]
    pub cap: RecordCap,
    pub set_by: String,
    pub set_at: i64,
}

/// A priced call its record's daily cap stopped: what the record has cost
/// today, what the call would add, and the cap. Firing again with
/// `spend_more` lets the call past the cap.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SpendQuestion {
    /// The connector the call was for.
    pub connector_id: String,
    pub unit: String,
    /// What the record's fires were billed today (and calls under way).
    pub spent_today: Amount,
    /// What the call would cost.
    pub price: Amount,
    pub daily_limit: Amount,
}

impl SpendQuestion {
    /// "This record has cost 0.40 USD today (its cap is 0.50 USD a day);
    /// spend 0.10 USD more?"
    pub fn ask(&self) -> String {
        format!(
            "This record has cost {} today (its cap is {} a day); spend {} more?",
            self.spent_today.in_unit(&self.unit),
            self.daily_limit.in_unit(&self.unit),
            self.price.in_unit(&self.unit)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_names_what_was_spent_the_cap_and_the_price() {
        let q = SpendQuestion {
            connector_id: "serpapi".into(),
            unit: "USD".into(),
            spent_today: Amount::from_micros(400_000),
            price: Amount::from_micros(100_000),
            daily_limit: Amount::from_micros(500_000),
        };
        assert_eq!(
            q.ask(),
            "This record has cost 0.40 USD today (its cap is 0.50 USD a day); spend 0.10 USD more?"
        );
    }

    #[test]
    fn a_cap_reads_as_written_and_refuses_unknown_fields() {
        let cap: RecordCap =
            serde_json::from_str(r#"{"unit": "USD", "daily_limit": 0.5}"#).unwrap();
        assert_eq!(cap.daily_limit, Amount::from_micros(500_000));
        assert!(serde_json::from_str::<RecordCap>(r#"{"unit": "USD", "limit": 0.5}"#).is_err());
    }
}
