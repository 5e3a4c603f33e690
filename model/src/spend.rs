//! What fires cost and what a workspace may spend: a connector's price, the
//! charge an attempt leaves, and monthly budgets with what they have left.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An amount of some unit (USD, credits, searches), held in millionths so
/// sums never drift. On the wire it is a plain decimal number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Amount(i64);

/// The largest amount a price or budget may name (a trillion units).
const MAX_UNITS: f64 = 1e12;

/// The most one call may cost, in whole units of its price's unit: a price
/// past it is a typo, and times a fan-out it would drown every sum.
pub const MAX_CALL_UNITS: i64 = 1_000_000;

impl Amount {
    pub const ZERO: Amount = Amount(0);

    pub const fn from_micros(micros: i64) -> Self {
        Amount(micros)
    }

    pub const fn micros(self) -> i64 {
        self.0
    }

    /// `units` whole units (e.g. one search).
    pub const fn units(units: i64) -> Self {
        Amount(units.saturating_mul(1_000_000))
    }

    /// A decimal number of units: finite, not negative, at most a trillion;
    /// below a millionth it rounds to the nearest millionth.
    pub fn from_decimal(units: f64) -> Result<Self, String> {
        if !units.is_finite() || units < 0.0 {
            return Err(format!("{units} is not an amount: use a number 0 or more"));
        }
        if units > MAX_UNITS {
            return Err(format!("{units} is more than {MAX_UNITS} units"));
        }
        // In range: at most 1e18 micros, below i64::MAX.
        #[allow(clippy::cast_possible_truncation)]
        Ok(Amount((units * 1e6).round() as i64))
    }

    /// An amount as a person types it ("0.5", " 12 "), checked as
    /// [`Amount::from_decimal`] checks a number.
    pub fn parse_decimal(text: &str) -> Result<Self, String> {
        let units: f64 = text
            .trim()
            .parse()
            .map_err(|_| format!("{:?} is not a number", text.trim()))?;
        Self::from_decimal(units)
    }

    #[allow(clippy::cast_precision_loss)]
    pub fn as_decimal(self) -> f64 {
        self.0 as f64 / 1e6
    }

    pub const fn saturating_add(self, other: Amount) -> Amount {
        Amount(self.0.saturating_add(other.0))
    }

    pub const fn saturating_sub(self, other: Amount) -> Amount {
        Amount(self.0.saturating_sub(other.0))
    }

    /// This amount `n` times.
    pub fn times(self, n: u64) -> Amount {
        Amount(self.0.saturating_mul(i64::try_from(n).unwrap_or(i64::MAX)))
    }

    /// This amount in `unit`, as people read it: money (a three-letter
    /// code such as USD) with at least two decimals, anything else without
    /// trailing zeros: "50.00 USD", "0.005 USD", "120 credits".
    pub fn in_unit(self, unit: &str) -> String {
        format!("{} {unit}", self.digits(is_currency(unit)))
    }

    fn digits(self, money: bool) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let (whole, frac) = (abs / 1_000_000, abs % 1_000_000);
        let mut frac = format!("{frac:06}");
        let keep = if money { 2 } else { 0 };
        while frac.len() > keep && frac.ends_with('0') {
            frac.pop();
        }
        if frac.is_empty() {
            format!("{sign}{whole}")
        } else {
            format!("{sign}{whole}.{frac}")
        }
    }
}

/// Whether a unit names money: three capital letters, like an ISO 4217 code.
fn is_currency(unit: &str) -> bool {
    unit.len() == 3 && unit.bytes().all(|b| b.is_ascii_uppercase())
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.digits(false))
    }
}

impl Serialize for Amount {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.as_decimal())
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let units = f64::deserialize(d)?;
        Amount::from_decimal(units).map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Amount {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::Number)
            .minimum(Some(0.0))
            .description(Some("A decimal amount of the unit named beside it."))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Amount {}

/// Checks a unit's name: 1 to 32 characters, letters, digits, spaces and
/// `-`, `_`, `.`, starting with a letter.
pub fn check_unit(unit: &str) -> Result<(), String> {
    let ok = (1..=32).contains(&unit.len())
        && unit.starts_with(|c: char| c.is_ascii_alphabetic())
        && unit
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{unit:?} is not a unit: use 1 to 32 letters, digits, spaces, '-', '_' or '.', starting with a letter (e.g. USD, credits)"
        ))
    }
}

/// What one call of a connector costs, as its operator declares it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Cost {
    pub per_call: Amount,
    /// USD, EUR, credits, searches...: budgets of this unit count it.
    pub unit: String,
    /// Whether the provider bills a call that found nothing.
    #[serde(default = "yes")]
    pub bills_empty: bool,
    /// Whether the provider bills a call it answered with an error status
    /// (4xx, 5xx, 429). Unless its documented rules say it does not
    /// (`false`), it is taken to: the cost stays counted, so a budget stops
    /// early, never late. A call that got no answer at all (the connection
    /// failed) is not billed; one cut off while waiting (a timeout) is.
    /// Left out when true, so a manifest written before it keeps its
    /// digest (its version in receipts).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub bills_errors: bool,
    /// Capabilities whose calls cost something else than `per_call`, by
    /// dotted name (a crawl that reads ten pages, say).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_capability: BTreeMap<String, Amount>,
}

fn yes() -> bool {
    true
}

fn is_yes(value: &bool) -> bool {
    *value
}

impl Cost {
    /// `per_call` of `unit` for every call, empty answers and errors billed.
    pub fn per_call(per_call: Amount, unit: &str) -> Self {
        Cost {
            per_call,
            unit: unit.to_owned(),
            bills_empty: true,
            bills_errors: true,
            by_capability: BTreeMap::new(),
        }
    }

    /// What a call for `capability` (a dotted name) costs.
    pub fn of_call(&self, capability: &str) -> Amount {
        self.by_capability
            .get(capability)
            .copied()
            .unwrap_or(self.per_call)
    }

    pub fn check(&self) -> Result<(), String> {
        check_unit(&self.unit)
    }

    /// "0.005 USD a call (empty answers billed, errors free)".
    pub fn describe(&self) -> String {
        let billed = |yes| if yes { "billed" } else { "free" };
        format!(
            "{} a call (empty answers {}, errors {})",
            self.per_call.in_unit(&self.unit),
            billed(self.bills_empty),
            billed(self.bills_errors)
        )
    }
}

/// Whose key paid for an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PaidBy {
    /// The server's key: the operator's bill.
    Server,
    /// The workspace's own key: the workspace's bill.
    Workspace,
}

impl PaidBy {
    pub const fn name(self) -> &'static str {
        match self {
            PaidBy::Server => "server",
            PaidBy::Workspace => "workspace",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "server" => Some(PaidBy::Server),
            "workspace" => Some(PaidBy::Workspace),
            _ => None,
        }
    }
}

/// What an attempt was billed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Charge {
    pub amount: Amount,
    pub unit: String,
    pub paid_by: PaidBy,
}

/// What a plain click on a chip would cost now: the price of a call of the
/// connector it fires first, and what is left this month of the tightest
/// budget counting it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NextCost {
    pub amount: Amount,
    pub unit: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_left: Option<Amount>,
}

impl NextCost {
    /// "0.10 USD a click, 3.20 USD left this month".
    pub fn describe(&self) -> String {
        let price = format!("{} a click", self.amount.in_unit(&self.unit));
        match self.budget_left {
            Some(left) => format!("{price}, {} left this month", left.in_unit(&self.unit)),
            None => price,
        }
    }
}

/// What a record's fires were billed today (UTC), in one unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SpentToday {
    pub unit: String,
    pub amount: Amount,
}

/// "0.40 USD and 2 SerpApi searches".
pub fn describe_spent(spent: &[SpentToday]) -> String {
    let parts: Vec<String> = spent.iter().map(|s| s.amount.in_unit(&s.unit)).collect();
    parts.join(" and ")
}

/// A monthly budget of a workspace: for one connector, or for every
/// connector priced in its unit (`connector_id` absent).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_id: Option<String>,
    pub unit: String,
    pub monthly_limit: Amount,
}

impl Budget {
    /// Whether it counts a call of `connector_id` priced in `unit`.
    pub fn counts(&self, connector_id: &str, unit: &str) -> bool {
        self.unit == unit
            && self
                .connector_id
                .as_deref()
                .is_none_or(|c| c == connector_id)
    }

    /// What it covers, in words: its connector (as `connector_name` names
    /// it), or every connector priced in its unit.
    pub fn covers(&self, connector_name: &str) -> String {
        match self.connector_id {
            Some(_) => connector_name.to_owned(),
            None => format!("every connector priced in {}", self.unit),
        }
    }
}

/// A budget with this month's spend against it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BudgetStatus {
    #[serde(flatten)]
    pub budget: Budget,
    /// The UTC month counted, `YYYY-MM`.
    pub month: String,
    pub spent: Amount,
    /// Who last set it, and when (Unix ms).
    pub set_by: String,
    pub set_at: i64,
}

impl BudgetStatus {
    /// What is left this month (never below zero).
    pub fn left(&self) -> Amount {
        self.budget
            .monthly_limit
            .saturating_sub(self.spent)
            .max(Amount::ZERO)
    }

    /// The share spent, in whole percent (100 for a budget of zero).
    pub fn percent(&self) -> u32 {
        let limit = self.budget.monthly_limit.micros();
        if limit <= 0 {
            return 100;
        }
        let pct = self.spent.micros().saturating_mul(100) / limit;
        u32::try_from(pct.max(0)).unwrap_or(u32::MAX)
    }

    /// Spent past the warning line (80 %).
    pub fn warns(&self) -> bool {
        self.percent() >= WARN_PERCENT
    }

    /// Why a call it stops does not go out: "budget for SerpApi spent:
    /// 50.00 of 50.00 USD this month".
    pub fn spent_reason(&self, connector_name: &str) -> String {
        format!(
            "budget for {} spent: {}",
            self.budget.covers(connector_name),
            self.describe()
        )
    }

    /// "50.00 of 50.00 USD this month".
    pub fn describe(&self) -> String {
        let money = is_currency(&self.budget.unit);
        format!(
            "{} of {} {} this month",
            self.spent.digits(money),
            self.budget.monthly_limit.digits(money),
            self.budget.unit
        )
    }
}

/// What a workspace spent in one month, per unit, for the spend page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SpendReport {
    /// The UTC month, `YYYY-MM`.
    pub month: String,
    /// One entry per unit spent in, most attempts first.
    pub units: Vec<UnitSpend>,
}

/// A month's spend in one unit, broken down.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UnitSpend {
    pub unit: String,
    pub total: Amount,
    /// Billed attempts.
    pub attempts: u64,
    /// By whose key paid: `server`, `workspace`.
    pub by_key: Vec<SpendBucket>,
    /// Every day of the month, `YYYY-MM-DD`, oldest first (zero included).
    pub by_day: Vec<SpendBucket>,
    /// The rest, largest first.
    pub by_connector: Vec<SpendBucket>,
    pub by_person: Vec<SpendBucket>,
    /// Capability calls count under "capability calls".
    pub by_record_set: Vec<SpendBucket>,
}

/// What one day, connector, person or record set spent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SpendBucket {
    pub key: String,
    pub amount: Amount,
    pub attempts: u64,
}

/// The share of a budget past which the inventory and the live stream warn.
pub const WARN_PERCENT: u32 = 80;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_as_people_write_them() {
        let a = Amount::from_decimal(0.005).unwrap();
        assert_eq!(a.micros(), 5_000);
        assert_eq!(a.in_unit("USD"), "0.005 USD");
        assert_eq!(Amount::units(50).in_unit("USD"), "50.00 USD");
        assert_eq!(Amount::units(120).in_unit("credits"), "120 credits");
        assert_eq!(
            Amount::from_decimal(1.5).unwrap().in_unit("credits"),
            "1.5 credits"
        );
        assert!(Amount::from_decimal(-1.0).is_err());
        assert!(Amount::from_decimal(f64::NAN).is_err());
        assert_eq!(
            Amount::parse_decimal(" 0.3 "),
            Ok(Amount::from_micros(300_000))
        );
        assert_eq!(
            Amount::parse_decimal("ten"),
            Err("\"ten\" is not a number".to_owned())
        );
        assert!(Amount::parse_decimal("-2").is_err());
        assert!(Amount::from_decimal(2e12).is_err());
        let json = serde_json::to_string(&Amount::from_decimal(0.25).unwrap()).unwrap();
        assert_eq!(json, "0.25");
        assert_eq!(
            serde_json::from_str::<Amount>("12.5").unwrap(),
            Amount::from_micros(12_500_000)
        );
        assert!(serde_json::from_str::<Amount>("-3").is_err());
    }

    #[test]
    fn a_budget_says_what_is_spent_and_left() {
        let status = BudgetStatus {
            budget: Budget {
                connector_id: Some("serpapi".into()),
                unit: "USD".into(),
                monthly_limit: Amount::units(50),
            },
            month: "2026-12".into(),
            spent: Amount::units(40),
            set_by: "ana".into(),
            set_at: 0,
        };
        assert_eq!(status.describe(), "40.00 of 50.00 USD this month");
        assert_eq!(status.left(), Amount::units(10));
        assert_eq!(status.percent(), 80);
        assert!(status.warns());
    }

    #[test]
    fn units_are_short_names() {
        assert!(check_unit("USD").is_ok());
        assert!(check_unit("SerpApi searches").is_ok());
        assert!(check_unit("").is_err());
        assert!(check_unit("<b>").is_err());
        assert!(check_unit("1x").is_err());
    }
}
