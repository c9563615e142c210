//! `eden top`'s screen: what it knows of the runs (`model`: records and logs read as they
//! change), what it shows and asks (`screen`: the view, the selection, the keys), and how it is
//! drawn (`view`, with ratatui). The terminal, the loop and the actions are `commands::top`'s.

mod model;
mod screen;
mod terminal;
mod view;

pub(crate) use model::Board;
pub(crate) use screen::{Action, Key, Screen, View};
pub(crate) use terminal::{Input, Session};
pub(crate) use view::draw;

#[cfg(test)]
mod tests;
