// What assistive technology needs from pages that change by themselves (issue 31):
//  1. Announcements. One polite live region (#live-region in base.html) that is never swapped,
//     so screen readers notice when its text changes. An element with data-announce="…" says
//     what it means now ("Agent run finished: Completed"); when an htmx swap brings back the
//     same id with another text, that text is announced. A swap that answers the person's own
//     request (a POST: asking the agent, adding a task) also announces elements new to the page.
//     Flash messages on a page that was just loaded (the result of a form, a bulk action) and
//     data-announce-refresh before an HX-Refresh reload are announced once the page is there.
//  2. Focus after swaps. htmx puts the focus back on an element with the same id. When the
//     focused element is gone or disabled, the focus goes to [data-swap-focus] in the new
//     content, else to its equivalent (same link, same button of the same form), else to the
//     swapped region itself, never to the top of the page. After the person's own request
//     (a POST), [data-swap-focus] wins: asking the agent leaves them in the question box.
//  3. Scrolling boxes. A table or box that scrolls inside the page (wide tables on a phone, at
//     200% zoom, a long timeline) takes the keyboard focus, so the arrow keys can scroll it.
(function () {
  'use strict';

  // --- 1. Announcements ----------------------------------------------------------------------
  var region;
  var queue = [];
  var timer = 0;

  function liveRegion() {
    if (!region || !region.isConnected) region = document.getElementById('live-region');
    return region;
  }

  // Texts announced together are joined; the region is emptied first, so the same sentence
  // said twice (two runs ending alike) is announced twice.
  function announce(text) {
    text = (text || '').replace(/\s+/g, ' ').trim();
    if (!text || !liveRegion()) return;
    queue.push(text);
    clearTimeout(timer);
    region.textContent = '';
    timer = setTimeout(function () {
      region.textContent = queue.join(' ');
      queue = [];
    }, 150);
  }
  window.caseworkAnnounce = announce;

  var said = {};  // id -> the data-announce text the page last showed for it

  function remember(root) {
    (root.querySelectorAll ? root : document).querySelectorAll('[data-announce][id]').forEach(function (el) {
      said[el.id] = el.getAttribute('data-announce');
    });
  }

  function announceChanges(root, ownRequest) {
    var elements = [];
    if (root.matches && root.matches('[data-announce][id]')) elements.push(root);
    if (root.querySelectorAll) elements = elements.concat(Array.prototype.slice.call(root.querySelectorAll('[data-announce][id]')));
    elements.forEach(function (el) {
      var text = el.getAttribute('data-announce');
      var before = said[el.id];
      said[el.id] = text;
      if (before === undefined ? ownRequest : before !== text) announce(text);
    });
  }

  function announceOnLoad() {
    remember(document);
    var pending = null;
    try { pending = window.sessionStorage.getItem('cw-announce'); window.sessionStorage.removeItem('cw-announce'); } catch (e) { /* private mode */ }
    var texts = [];
    if (pending) texts.push(pending);
    document.querySelectorAll('.messages .flash').forEach(function (flash) { texts.push(flash.textContent); });
    // Late enough for a screen reader to have started reading the new page.
    if (texts.length) setTimeout(function () { texts.forEach(announce); }, 400);
  }

  // --- 2. Focus after swaps ------------------------------------------------------------------
  var FOCUSABLE = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]';

  function focusable(el) {
    return !!el && el.isConnected && !el.disabled && !el.closest('[hidden], [inert]') &&
      el.getClientRects().length > 0;
  }

  function keyOf(el) {
    if (!el || el === document.body || el === document.documentElement) return null;
    var form = el.form || (el.closest && el.closest('form'));
    return {id: el.id, tag: el.tagName, href: el.getAttribute('href'), name: el.getAttribute('name'),
            value: el.getAttribute('value'), text: (el.textContent || '').trim(),
            action: form ? form.getAttribute('action') || form.getAttribute('hx-post') : null};
  }

  function sameAs(key, el, loose) {
    if (el.tagName !== key.tag) return false;
    if (key.href) return el.getAttribute('href') === key.href && (loose || (el.textContent || '').trim() === key.text);
    var form = el.form || el.closest('form');
    var action = form ? form.getAttribute('action') || form.getAttribute('hx-post') : null;
    if (action !== key.action) return false;
    if (key.name) return el.getAttribute('name') === key.name && el.getAttribute('value') === key.value;
    return (el.textContent || '').trim() === key.text;
  }

  function lostFocus() {
    var active = document.activeElement;
    return !active || active === document.body || !active.isConnected;
  }

  function focusInto(root, key) {
    var choice = root.querySelector('[data-swap-focus]');
    [false, true].forEach(function (loose) {  // the same link with the same words first
      if (focusable(choice) || !key) return;
      choice = Array.prototype.filter.call(root.querySelectorAll(key.tag), function (el) {
        return focusable(el) && sameAs(key, el, loose);
      })[0];
    });
    if (!focusable(choice)) {
      choice = root;
      if (!choice.matches(FOCUSABLE)) choice.setAttribute('tabindex', '-1');
    }
    choice.focus({preventScroll: false});
  }

  var focusedAtRequest = new WeakMap();
  document.addEventListener('htmx:beforeRequest', function (event) {
    // Before htmx disables the button (hx-disabled-elt), which takes the focus away from it.
    focusedAtRequest.set(event.target, document.activeElement);
  });

  // One record per swap, from beforeSwap to the settle of the elements it brought (htmx puts
  // back a swapped element's own attributes only at the settle, so data-announce is read then).
  var next = null;
  var swapping = null;
  var settling = [];
  document.addEventListener('htmx:beforeSwap', function (event) {
    var target = event.detail.target;
    var active = document.activeElement;
    var config = event.detail.requestConfig;  // beforeSwap fires on the target, not the requester
    if (!active || active === document.body) active = focusedAtRequest.get((config && config.elt) || event.target);
    var inside = !!(target && active && active !== document.body && (target === active || target.contains(active)));
    var verb = config && config.verb;
    next = {target: target, id: target && target.id, parent: target && target.parentElement, elts: [],
            key: inside ? keyOf(active) : null, inside: inside, own: !!verb && verb !== 'get'};
  });

  document.addEventListener('htmx:afterSwap', function (event) {
    if (next) {
      swapping = next;
      next = null;
      settling.push(swapping);
      setTimeout(function () { swapping = null; }, 0);  // afterSwap fires for each element in one go
    }
    if (swapping) swapping.elts.push(event.target);
  });

  document.addEventListener('htmx:afterSettle', function (event) {
    var swap = settling.filter(function (s) { return s.elts.indexOf(event.target) >= 0; })[0];
    if (!swap) return;
    settling.splice(settling.indexOf(swap), 1);
    // After every other afterSettle listener (keys.js keeps its place on a queue row).
    setTimeout(function () {
      var root = (swap.id && document.getElementById(swap.id)) ||
        (swap.target && swap.target.isConnected ? swap.target : null) ||
        (swap.parent && swap.parent.isConnected ? swap.parent : null) || document.getElementById('main');
      if (!root) return;
      swap.elts.forEach(function (el) { if (el.isConnected && !root.contains(el)) announceChanges(el, false); });
      announceChanges(root, swap.own);
      markScrollers(root);
      // Lost with the swap; or the person's own request (asking the agent) puts it where they go on.
      if (swap.inside && (lostFocus() || (swap.own && focusable(root.querySelector('[data-swap-focus]'))))) {
        focusInto(root, swap.key);
      }
    }, 0);
  });

  // The server asks for a reload (HX-Refresh) when a run ends: say so on the reloaded page.
  document.addEventListener('htmx:afterRequest', function (event) {
    var xhr = event.detail.xhr;
    if (!xhr || xhr.getResponseHeader('HX-Refresh') !== 'true') return;
    var source = event.target && event.target.closest && event.target.closest('[data-announce-refresh]');
    if (!source) return;
    try { window.sessionStorage.setItem('cw-announce', source.getAttribute('data-announce-refresh')); } catch (e) { /* private mode */ }
  });

  // --- 3. Scrolling boxes --------------------------------------------------------------------
  var SCROLLS = /(auto|scroll)/;

  function scrolls(el) {
    return el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
  }

  function update(el) {
    var mine = el.hasAttribute('data-scroll-focus');
    var style = window.getComputedStyle(el);
    if ((SCROLLS.test(style.overflowX) || SCROLLS.test(style.overflowY)) && scrolls(el)) {
      if (!mine && !el.hasAttribute('tabindex')) {
        el.setAttribute('tabindex', '0');
        el.setAttribute('data-scroll-focus', '');
      }
    } else if (mine) {
      el.removeAttribute('tabindex');
      el.removeAttribute('data-scroll-focus');
    }
  }

  var observer = window.ResizeObserver ? new ResizeObserver(function (entries) {
    entries.forEach(function (entry) { update(entry.target); });
  }) : null;

  // Any box whose CSS lets it scroll: watched for its size (a tab's panel shown, content swapped
  // in), and looked at again when the window's width changes the CSS (a phone's width, zoom).
  function markScrollers(root) {
    var scope = root && root.querySelectorAll ? root : document.getElementById('main');
    if (!scope) return;
    var candidates = [scope].concat(Array.prototype.slice.call(scope.querySelectorAll('table, div, pre, section, ul, ol, dl')));
    candidates.forEach(function (el) {
      if (el.id === 'main') return;
      var style = window.getComputedStyle(el);
      if (!SCROLLS.test(style.overflowX) && !SCROLLS.test(style.overflowY)) {
        if (el.hasAttribute('data-scroll-focus')) update(el);
        return;
      }
      update(el);
      if (observer && !el.hasAttribute('data-scroll-watched')) {
        el.setAttribute('data-scroll-watched', '');
        observer.observe(el);
      }
    });
  }

  var resizing = 0;
  window.addEventListener('resize', function () {
    cancelAnimationFrame(resizing);
    resizing = requestAnimationFrame(function () { markScrollers(document.getElementById('main')); });
  });

  function init() {
    announceOnLoad();
    markScrollers(document.getElementById('main'));
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init); else init();
})();
