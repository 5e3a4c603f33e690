//! One module per page of the app.

mod account;
mod inventory;
pub mod lazy;
mod members;
mod my_chains;
mod not_found;
mod ordered_list;
mod packs;
mod record_sets;
mod refresh;
mod spend;
mod unanswered;

pub use account::{
    provide_viewer, AccountCorner, SetPasswordPage, SettingsPage, SignInPage, ViewerResource,
};
pub use inventory::InventoryPage;
pub use members::MembersPage;
pub use not_found::NotFoundPage;
pub use packs::PacksPage;
pub use record_sets::{ImportCsv, RecordSetsPage};
pub use spend::SpendPage;
