//! Demo data for `--demo`: a record set of made-up companies, plainly marked as
//! demo data in its name, its flag and every record's name. Their websites are
//! under the reserved `.example` domain, so nothing real is ever looked up.

use crate::import::{parse_csv, ImportLimits};
use crate::store::{Store, StoreError};

/// The made-up companies.
const DEMO_CSV: &str = include_str!("../demo/companies.csv");
/// The demo record set's name.
pub const DEMO_SET_NAME: &str = "Demo companies (made-up data)";
/// The bundle the demo set is triaged under.
pub const DEMO_BUNDLE: &str = "social-profiles";

/// Creates the demo record set in a workspace unless it has one. Returns its id
/// when created.
pub async fn load_demo_record_set(
    store: &Store,
    workspace_id: i64,
) -> Result<Option<i64>, StoreError> {
    if store
        .list_record_sets(workspace_id)
        .await?
        .iter()
        .any(|s| s.is_demo)
    {
        return Ok(None);
    }
    let parsed = parse_csv(DEMO_CSV.as_bytes(), ImportLimits::default())
        .map_err(|e| StoreError::Corrupt(format!("the shipped demo CSV: {e}")))?;
    let id = store
        .create_record_set(
            workspace_id,
            DEMO_SET_NAME,
            DEMO_BUNDLE,
            true,
            &parsed.records,
        )
        .await?;
    Ok(Some(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_csv_is_clean_and_labelled() {
        let parsed = parse_csv(DEMO_CSV.as_bytes(), ImportLimits::default()).unwrap();
        assert!(parsed.rejected.is_empty(), "{:?}", parsed.rejected);
        assert!(parsed.records.len() >= 10);
        for r in &parsed.records {
            assert!(r.name.ends_with("(demo)"), "{}", r.name);
            let site = &r.fields.iter().find(|f| f.name == "website").unwrap().value;
            assert!(site.ends_with(".example"), "{site}");
        }
        assert!(crate::packs::Catalog::builtin()
            .bundle(DEMO_BUNDLE)
            .is_some());
    }

    #[tokio::test]
    async fn loading_twice_makes_one_demo_set() {
        let db = crate::store::testing::sqlite();
        let store = Store::connect(&db.url).await.unwrap();
        let (ws, _) = store.ensure_workspace("demo").await.unwrap();
        assert!(load_demo_record_set(&store, ws).await.unwrap().is_some());
        assert!(load_demo_record_set(&store, ws).await.unwrap().is_none());
        let sets = store.list_record_sets(ws).await.unwrap();
        assert_eq!(sets.len(), 1);
        assert!(sets[0].is_demo);
        assert_eq!(sets[0].name, DEMO_SET_NAME);
    }
}
