//! Mouse capture: a key turns it off, so the terminal selects text as usual, and on again
//! (where mouse events go is the app's input, `input.rs`).

/// Turns the terminal's mouse reporting on or off.
pub type MouseSwitch = Box<dyn FnMut(bool) -> std::io::Result<()> + Send>;

/// Whether the app asks the terminal for mouse events, and how it tells the terminal.
pub struct MouseCapture {
    on: bool,
    switch: Option<MouseSwitch>,
}

impl Default for MouseCapture {
    /// On (the terminal is set up with it), with no terminal to tell.
    fn default() -> Self {
        MouseCapture {
            on: true,
            switch: None,
        }
    }
}

impl MouseCapture {
    /// Whether the terminal reports the mouse.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Tells the terminal with `switch` from now on.
    pub fn set_switch(&mut self, switch: MouseSwitch) {
        self.switch = Some(switch);
    }

    /// Capture off, or back on: whether it is on now, or why the terminal was not told
    /// (then it stays as it was).
    pub fn toggle(&mut self) -> std::io::Result<bool> {
        let on = !self.on;
        if let Some(switch) = self.switch.as_mut() {
            switch(on)?;
        }
        self.on = on;
        Ok(on)
    }
}
